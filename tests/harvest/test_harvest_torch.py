"""gradcheck.harvest on torch: each custom Function of a model checked at the
inputs the model feeds it, named PATH:Class, the model left as it was."""
from __future__ import annotations

import re
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from adcheck import gradcheck  # noqa: E402
from adcheck.gradcheck.harvest import ForwardError, NothingHarvested, record  # noqa: E402

D = torch.float64


def _state(model):
    return ({k: v.clone() for k, v in model.state_dict().items()},
            {n: None if p.grad is None else p.grad.clone() for n, p in model.named_parameters()},
            [m.training for m in model.modules()])


def _same(a, b) -> bool:
    (s1, g1, t1), (s2, g2, t2) = a, b
    return (s1.keys() == s2.keys() and all(torch.equal(s1[k], s2[k]) for k in s1)
            and all((g1[k] is None and g2[k] is None) or torch.equal(g1[k], g2[k]) for k in g1)
            and t1 == t2)


def test_the_example_model_fails_naming_exactly_the_two_wrong_functions(example):
    model = example.Model()
    (x,) = example.example_inputs()
    before = _state(model)
    found = gradcheck.harvest(model, (x,), seed=0)
    assert _same(before, _state(model))
    assert sorted(found.failing()) == ["norm_f:ScaleNormFn", "temp:TemperatureFn"]
    assert "blocks.1.mlp.act:GeluTanhFn" in found.reports
    assert len(found.reports) == 12
    (temp,) = found.reports["temp:TemperatureFn"]
    assert [f.in_name for f in temp.failures] == ["temp.log_t"]    # the parameter, named
    assert "the whole model fails; at fault on their own:" in found.localisation
    assert found.model is not None and found.model.escape      # probed: odds stated


def test_the_two_wrong_functions_are_wrong_by_what_the_example_says(example):
    # independent of adcheck: torch's own gradcheck and a central difference
    # written here, at the inputs the harvest recorded
    recording = record(example.Model(), example.example_inputs())
    apps = {a.name: a for a in recording.applications}
    z, log_t = (a.double().requires_grad_() for a in apps["temp:TemperatureFn"].args)
    assert not torch.autograd.gradcheck(example.TemperatureFn.apply, (z, log_t),
                                        raise_exception=False)
    x, g = (a.double() for a in apps["norm_f:ScaleNormFn"].args)
    # a fixed rtol of 1e-3 lets the ScaleNorm error through ...
    assert torch.autograd.gradcheck(example.ScaleNormFn.apply,
                                    (x.requires_grad_(), g.requires_grad_()))
    # ... which is 1e-3 relative in the vjp: along u = the vjp itself, v^T J u is
    # |J^T v|^2 / (1 + error) and vjp . u is |vjp|^2, both far from zero
    v = torch.randn(x.shape, dtype=D, generator=torch.Generator().manual_seed(1))
    xg = x.detach().requires_grad_()
    (vjp,) = torch.autograd.grad(example.ScaleNormFn.apply(xg, g), xg, v)
    u, h = vjp / vjp.norm(), 1e-5
    with torch.no_grad():
        fd = ((example.ScaleNormFn.apply(x + h * u, g) - example.ScaleNormFn.apply(x - h * u, g))
              * v).sum() / (2 * h)
    assert abs((vjp * u).sum() / fd - 1 - example.SCALENORM_ERROR) < 1e-6


class Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return 2 * x

    @staticmethod
    def backward(ctx, g):
        return 2 * g


class Twice(torch.nn.Module):
    """Applies Double at one path to two shapes, three times."""

    def forward(self, x):
        return Double.apply(x).sum() + Double.apply(x[:2]).sum() + Double.apply(x[2:4]).sum()


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = torch.nn.Sequential(torch.nn.Linear(3, 3), Twice())
        self.bn = torch.nn.BatchNorm1d(3)

    def forward(self, x):
        return self.inner(self.bn(x))


def test_calls_at_one_path_are_samples_up_to_max_shapes():
    x = torch.randn(5, 3)
    (op,) = record(Net(), (x,)).ops
    assert (op.name, op.calls, len(op.samples)) == ("inner.1:Double", 3, 2)
    (op,) = record(Net(), (x,), max_shapes=1).ops
    assert len(op.samples) == 1
    assert op.samples[0].inputs[0].dtype == D     # a double-precision copy of a float32 input


def test_buffers_grads_and_training_mode_are_left_as_they_were():
    net = Net()
    net.inner[0].weight.grad = torch.ones(3, 3)
    net.inner.eval()
    before = _state(net)
    gradcheck.harvest(net, (torch.randn(5, 3),), seed=0)
    assert _same(before, _state(net))      # BatchNorm's running statistics too
    assert net.inner[0].weight.grad is not None and "forward" not in net.inner[1].__dict__


class Shout(torch.nn.Module):
    def forward(self, x):
        raise RuntimeError("shapes do not match")


def test_a_forward_that_raises_names_the_module_where():
    model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Sequential(Shout()))
    with pytest.raises(ForwardError, match=r"RuntimeError: shapes do not match \(in 1\.0\)"):
        gradcheck.harvest(model, (torch.randn(2, 3),))


def test_a_model_without_custom_functions_is_told_so():
    with pytest.raises(NothingHarvested, match="applied no custom Function"):
        gradcheck.harvest(torch.nn.Linear(3, 3), (torch.randn(2, 3),))


class Detached(torch.nn.Module):
    """Right Function, wrong composition: its output is cut from the graph."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(3))

    def forward(self, x):
        return Double.apply(x * self.w).detach() * self.w


def test_a_composition_fault_is_localised_when_no_function_fails():
    found = gradcheck.harvest(Detached(), (torch.randn(3),), seed=0)
    assert found.failing() == [] and found.model is not None and not found.model.passed
    assert "no harvested Function fails on its own" in found.localisation
    assert "the output of (root):Double does not reach the model's output" in found.localisation


class UnderNoGrad(torch.nn.Module):
    def forward(self, x):
        with torch.no_grad():
            y = Double.apply(x)
        return x * y


def test_a_function_applied_under_no_grad_is_not_checked_and_said_why():
    found = gradcheck.harvest(UnderNoGrad(), (torch.randn(3),), seed=0)
    assert "applied under no_grad" in found.skipped["(root):Double"]
    assert found.reports == {}
    assert "(root):Double is applied under no_grad" in found.composition


class AddOneInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.add_(1)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g


class Inner(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.exp()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.exp() * 3           # wrong by a factor 3


class Outer(torch.autograd.Function):
    """Applies Inner inside its forward; its own backward is right."""

    @staticmethod
    def forward(ctx, x):
        y = Inner.apply(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


class WithCount(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x, 2

    @staticmethod
    def backward(ctx, g, _):
        (x,) = ctx.saved_tensors
        return 2 * x * g * 1.5              # wrong by a factor 1.5


class OnlyFloat32(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x.float() * 3).sin()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return (3 * (3 * x.float()).cos() * g).to(x.dtype)


def test_in_place_writes_are_checked_on_copies_and_reported():
    def fn(x):
        return AddOneInPlace.apply(x.clone()) * x
    x = torch.randn(3, dtype=D, requires_grad=True)
    found = gradcheck.harvest(fn, (x,), seed=0, model_check=False)
    assert found.failing() == []
    assert any("in place: checked on copies" in n for n in found.notes["fn:AddOneInPlace"])


def test_nested_functions_are_each_checked_on_their_own():
    def fn(x):
        return Outer.apply(x)
    found = gradcheck.harvest(fn, (torch.randn(3, dtype=D, requires_grad=True),), seed=0,
                              model_check=False)
    assert found.failing() == ["fn:Inner"]
    assert any("inside another Function" in n for n in found.notes["fn:Inner"])


def test_non_tensor_outputs_are_left_out_of_the_check():
    def fn(x):
        y, _ = WithCount.apply(x)
        return y
    found = gradcheck.harvest(fn, (torch.randn(3, dtype=D, requires_grad=True),), seed=0,
                              model_check=False)
    assert found.failing() == ["fn:WithCount"]
    (report,) = found.reports["fn:WithCount"]
    factor = re.search(r"analytical is (\S+) times numerical", report.failures[0].diagnosis)
    assert abs(float(factor.group(1)) - 1.5) < 1e-6
    assert any("not tensors" in n for n in found.notes["fn:WithCount"])


def test_a_function_that_answers_in_float32_is_checked_with_the_low_precision_rules():
    def fn(x):
        return OnlyFloat32.apply(x)
    (op,) = record(fn, (torch.randn(3),)).ops
    (sample,) = op.samples
    assert sample.inputs[0].dtype == torch.float32
    assert "does not run in double precision" in sample.notes[0]
    # its formula is right: judged within float32's rounding it passes, and so
    # does the whole function, checked in float32 too (no false composition fault)
    found = gradcheck.harvest(fn, (torch.randn(3, requires_grad=True),), seed=0)
    assert found.failing() == [] and found.localisation == "the whole model passes its check"


def test_check_options_compose_explore_and_probed_jacobians():
    # explore searches around the harvested inputs; a probed check states its escape odds
    def fn(x):
        return Double.apply(x).sin()
    x = torch.randn(3, dtype=D, requires_grad=True)
    found = gradcheck.harvest(fn, (x,), seed=0, model_check=False, explore=True,
                              explore_budget=1)
    (report,) = found.reports["fn:Double"]
    assert report.counts["explore"]["tried"] > 0
    found = gradcheck.harvest(fn, (x,), seed=0, model_check=False, jacobian="probed")
    (report,) = found.reports["fn:Double"]
    assert report.plan.startswith("probed") and report.escape


class BothWays(torch.nn.Module):
    """Applies Double under no_grad and, at the same shapes, with grad."""

    def forward(self, x):
        with torch.no_grad():
            scale = Double.apply(x).abs().mean()
        return Double.apply(x) * scale


def test_the_call_the_gradient_flows_through_is_the_sample_checked():
    x = torch.randn(3, dtype=D, requires_grad=True)
    found = gradcheck.harvest(BothWays(), (x,), seed=0)
    assert len(found.reports["(root):Double"]) == 1 and found.failing() == []
    # the no_grad call cuts the scale's gradient: the whole model's check fails on it
    assert not found.model.passed
    assert found.localisation.endswith("in how they are composed: (root):Double is applied "
                                       "under no_grad")
