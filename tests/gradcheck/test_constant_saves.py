"""A custom Function that keeps from its forward a tensor computed from its
inputs (``ctx.save_for_backward(mean, rstd)``, ``ctx.y = y``) has a right
first derivative and a wrong second: the forward records nothing, so the
double backward takes that tensor for a constant. A second-order failure
says so, naming the Function and the tensors (``gradcheck.verdict.constsaves``);
a backward whose only dependence on the inputs went through such a tensor is
a wrong double backward, not a missing one (it was skipped as "no double
backward"). torch's own gradgradcheck is the independent judge of which
double backwards are wrong."""
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

import adcheck.refengine as R  # noqa: E402
from adcheck.gradcheck import check  # noqa: E402
from adcheck.gradcheck.api import NO_DOUBLE_BACKWARD, lacks_double_backward  # noqa: E402
from adcheck.gradcheck.verdict.constsaves import constant_saves  # noqa: E402
from adcheck.gradcheck.engines import engine_for  # noqa: E402

sys.path.insert(0, str(Path(__file__).parents[1] / "cli" / "fixtures"))
# a backward returning a new tensor from NumPy: no graph even of the grad_output
from second_order import NumpyExp  # noqa: E402


class KeptLayerNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        mean = x.mean(-1, keepdim=True)
        rstd = 1.0 / torch.sqrt(x.var(-1, keepdim=True, unbiased=False) + 1e-5)
        out = (x - mean) * rstd
        ctx.save_for_backward(x, w, mean, rstd, out)
        return out * w

    @staticmethod
    def backward(ctx, dy):
        x, w, mean, rstd, out = ctx.saved_tensors
        dg = dy * w
        dx = rstd * (dg - dg.mean(-1, keepdim=True) - out * (dg * out).mean(-1, keepdim=True))
        return dx, (dy * out).sum(0)


class RecomputedLayerNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        rstd = 1.0 / torch.sqrt(x.var(-1, keepdim=True, unbiased=False) + 1e-5)
        return (x - x.mean(-1, keepdim=True)) * rstd * w

    @staticmethod
    def backward(ctx, dy):
        x, w = ctx.saved_tensors
        rstd = 1.0 / torch.sqrt(x.var(-1, keepdim=True, unbiased=False) + 1e-5)
        out = (x - x.mean(-1, keepdim=True)) * rstd
        dg = dy * w
        dx = rstd * (dg - dg.mean(-1, keepdim=True) - out * (dg * out).mean(-1, keepdim=True))
        return dx, (dy * out).sum(0)


def _exp_on_ctx(E, name: str):
    """exp on engine ``E`` whose backward reads exp(x) from ``ctx.y``, set in its
    forward: the backward's only path to x is a tensor without history."""
    def forward(ctx, x):
        y = E.exp(x)
        ctx.y = y * 1.0
        return y

    def backward(ctx, g):
        return g * ctx.y
    return type(name, (E.autograd.Function,),
                {"forward": staticmethod(forward), "backward": staticmethod(backward)})


ExpOnCtx = _exp_on_ctx(torch, "ExpOnCtx")
RefExpOnCtx = _exp_on_ctx(R, "RefExpOnCtx")


class MaskedRelu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        mask = (x > 0).to(x.dtype)
        ctx.save_for_backward(mask)
        return x * mask

    @staticmethod
    def backward(ctx, g):
        (mask,) = ctx.saved_tensors
        return g * mask


class NoisySquare(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        r = torch.rand_like(x) + 1
        ctx.save_for_backward(x, r)
        return x * x * r

    @staticmethod
    def backward(ctx, g):
        x, r = ctx.saved_tensors
        return 2 * g * x * r


class RefKeptNorm(R.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        mean = x.mean(-1, keepdim=True)
        rstd = 1.0 / R.sqrt(((x - mean) ** 2).mean(-1, keepdim=True) + 1e-5)
        ctx.save_for_backward(x, rstd)
        return (x - mean) * rstd

    @staticmethod
    def backward(ctx, g):
        x, rstd = ctx.saved_tensors
        out = (x - x.mean(-1, keepdim=True)) * rstd
        return rstd * (g - g.mean(-1, keepdim=True) - out * (g * out).mean(-1, keepdim=True))


def _t(*shape, seed=0, grad=True):
    values = np.random.default_rng(seed).standard_normal(shape)
    return torch.tensor(values, dtype=torch.float64, requires_grad=grad)


def _torch_gradgrad_fails(function, inputs) -> bool:
    try:
        return not torch.autograd.gradgradcheck(function, inputs, raise_exception=False)
    except RuntimeError:   # "appears to not have been used in the graph"
        return True


def test_intermediates_saved_in_forward_are_named_and_a_constant_weight_is_not():
    x, w = _t(4, 5), _t(5, seed=1, grad=False)   # (w: a constant of the layer)
    assert _torch_gradgrad_fails(KeptLayerNorm.apply, (x, w))
    report = check(KeptLayerNorm.apply, (x, w), order=2, precise=True, seed=0)
    assert not report.passed
    for failure in report.failures:
        assert failure.diagnosis.startswith(
            "KeptLayerNormBackward keeps 3 tensors from its forward that change with the "
            "inputs but carry no history (ctx.saved_tensors[2] of shape (4, 1), "
            "ctx.saved_tensors[3] of shape (4, 1), ctx.saved_tensors[4] of shape (4, 5))")
        assert "ctx.saved_tensors[1]" not in failure.diagnosis


def test_recomputing_in_the_backward_passes():
    x, w = _t(4, 5), _t(5, seed=1)
    assert not _torch_gradgrad_fails(RecomputedLayerNorm.apply, (x, w))
    assert check(RecomputedLayerNorm.apply, (x, w), order=2, precise=True, seed=0).passed


@pytest.mark.parametrize("cls, make", [
    (ExpOnCtx, lambda: _t(3, 4)),
    (RefExpOnCtx, lambda: R.tensor(np.random.default_rng(0).standard_normal((3, 4)),
                                   dtype=R.float64, requires_grad=True)),
])
def test_a_ctx_attribute_as_the_only_path_is_a_wrong_double_backward_not_none(cls, make):
    # the backward g * ctx.y has a graph of g but none of x: before, "no double backward"
    if cls is ExpOnCtx:
        assert _torch_gradgrad_fails(cls.apply, (make(),))
    report = check(cls.apply, (make(),), order=2, precise=True, seed=0)
    assert not report.passed and not lacks_double_backward(report)
    assert all(f.diagnosis.startswith(f"{cls.__name__}Backward keeps 1 tensor from its forward "
                                      "that changes with the inputs but carries no history "
                                      "(ctx.y of shape (3, 4))") for f in report.failures)


def test_refengine_custom_function_is_diagnosed_too():
    x = R.tensor(np.random.default_rng(2).standard_normal((3, 6)), dtype=R.float64,
                 requires_grad=True)
    report = check(RefKeptNorm.apply, (x,), order=2, precise=True, seed=0)
    assert not report.passed
    assert all("RefKeptNormBackward keeps 1 tensor" in f.diagnosis and
               "ctx.saved_tensors[1] of shape (3, 1)" in f.diagnosis for f in report.failures)
    # independent: central differences of the first derivative differ from its autograd
    v = R.tensor(np.random.default_rng(3).standard_normal((3, 6)), dtype=R.float64)

    def first(a):
        a = R.tensor(a, dtype=R.float64, requires_grad=True)
        (g,) = R.autograd.grad(RefKeptNorm.apply(a), a, v, create_graph=True)
        return g
    base, h = x.detach().numpy(), 1e-6
    step = np.zeros_like(base)
    step[0, 0] = h
    numerical = (first(base + step) - first(base - step)).detach().numpy() / (2 * h)
    a = R.tensor(base, dtype=R.float64, requires_grad=True)
    (g,) = R.autograd.grad(RefKeptNorm.apply(a), a, v, create_graph=True)
    column = np.array([R.autograd.grad(g[i, j], a, retain_graph=True)[0].numpy()[0, 0]
                       for i in range(3) for j in range(6)]).reshape(3, 6)
    assert not np.allclose(numerical, column, atol=1e-6)


def test_masks_and_random_draws_are_not_taken_for_intermediates():
    E = engine_for(torch.zeros(1))
    # one entry so close to 0 that the move crosses it: the mask changes there only
    x = torch.tensor([-2e-4, 0.5, -1.3, 2.0], dtype=torch.float64, requires_grad=True)
    assert constant_saves(E, MaskedRelu.apply, (x,)) == []
    assert constant_saves(E, NoisySquare.apply, (x,)) == []
    found = constant_saves(E, KeptLayerNorm.apply, (_t(2, 3), _t(3, seed=1)))
    assert [name for name, _ in found] == ["KeptLayerNormBackward"]


def test_a_backward_returning_a_new_tensor_has_no_double_backward():
    report = check(NumpyExp.apply, (_t(3, 4),), order=2, precise=True, seed=0)
    assert report.double_backward is False and lacks_double_backward(report)
    assert {f.diagnosis for f in report.failures} == {NO_DOUBLE_BACKWARD}


class KeptHinge(torch.autograd.Function):
    """sum(relu(x - 1)**2) / 2 keeping relu(x - 1): zero at most of randn's entries."""

    @staticmethod
    def forward(ctx, x):
        w = torch.relu(x - 1.0)
        ctx.save_for_backward(w)
        return 0.5 * (w * w).sum(-1)

    @staticmethod
    def backward(ctx, g):
        (w,) = ctx.saved_tensors
        return g.unsqueeze(-1) * w


def test_an_intermediate_mostly_zero_is_named_too():
    # found on torch-struct's sparsemax: the kept tensor changed at the few entries
    # not zero only, and the failure was skipped as "no double backward" (exit 0)
    x = torch.tensor([[-0.3, 1.8, 0.2, -1.1], [2.4, 0.1, -0.7, 0.6], [0.9, -2.0, 1.3, 0.0]],
                     dtype=torch.float64, requires_grad=True)
    assert int((x > 1).sum()) == 3     # relu(x - 1) is zero at 9 of 12 entries
    assert _torch_gradgrad_fails(KeptHinge.apply, (x,))
    report = check(KeptHinge.apply, (x,), order=2, precise=True, seed=0)
    assert not report.passed and not lacks_double_backward(report)
    assert all(f.diagnosis.startswith("KeptHingeBackward keeps 1 tensor from its forward")
               for f in report.failures)


class KeptView(torch.autograd.Function):
    """x * a, keeping a view of the input ``a`` made in the forward (entmax's
    bisection keeps its alpha so): the view requires grad but has no grad_fn,
    and torch takes it for a leaf of its own, so the double backward never
    reaches ``a`` through it. It was not named: the failure read "analytical is
    zero: the vjp returns no gradient", though the first-order vjp does."""

    @staticmethod
    def forward(ctx, x, a):
        ctx.save_for_backward(x)
        ctx.a = a.expand(x.shape[0], 1)
        return x * ctx.a

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * ctx.a, (g * x).sum(-1, keepdim=True)


class KeptInput(KeptView):
    """The same, keeping the input itself: its double backward is right."""

    @staticmethod
    def forward(ctx, x, a):
        ctx.save_for_backward(x)
        ctx.a = a
        return x * a


def _view_inputs():
    torch.manual_seed(0)
    return (torch.randn(3, 4, dtype=torch.float64, requires_grad=True),
            torch.rand(3, 1, dtype=torch.float64, requires_grad=True) + 0.5)


def test_a_view_of_an_input_made_in_the_forward_is_named():
    inputs = _view_inputs()
    assert not torch.autograd.gradgradcheck(KeptView.apply, inputs, raise_exception=False)
    assert torch.autograd.gradgradcheck(KeptInput.apply, inputs)
    E = engine_for(inputs)
    assert constant_saves(E, KeptView.apply, inputs) == [("KeptViewBackward", [("ctx.a", (3, 1))])]
    assert constant_saves(E, KeptInput.apply, inputs) == []
    report = check(KeptView.apply, inputs, order=2, seed=0, explore=False)
    assert not report.passed
    assert all("ctx.a of shape (3, 1)" in r.diagnosis for r in report.failures)
