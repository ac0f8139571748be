"""A failed double-precision check of op_db carries torch's verdict and, where
torch's gradcheck passes, an independent value of the disputed entry
(``opinfo.torchdb.dispute``; issue 18: "every disagreement ... carries which
side is right and the evidence"). Each case knows the truth independently:
an exact derivative, or torch's own gradcheck run here.
"""
import math
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the dispute runs torch's gradcheck; "
                            "torch is not installed")
pytest.importorskip("expecttest", reason="PyTorch's op_db imports expecttest, which is "
                    "not installed (pip install expecttest)")

from adcheck.gradcheck.verdict.compare import Result  # noqa: E402
from adcheck.opinfo.torchdb.dispute import dispute  # noqa: E402
from adcheck.runner.checks import Policy, check_sample  # noqa: E402
from adcheck.runner.torchregistry import TorchRegistry  # noqa: E402

SLOW = [("gradcheck", {"fast_mode": False, "nondet_tol": 0.0})]


def _report(out_idx, in_idx, where, numerical, analytical, shape):
    expected, actual = np.zeros(shape), np.zeros(shape)
    expected[where], actual[where] = numerical, analytical
    failure = Result("jacobian", "reverse", "numerical", out_idx, in_idx, False,
                     abs(numerical - analytical), where, 1e-12, expected, actual)
    return SimpleNamespace(failures=[failure])


def test_hardsigmoid_float64_disputed_and_settled_for_adcheck():
    """torch's float64 hardsigmoid backward multiplies by float32(1/6); the exact
    derivative in the linear region is 1/6. The sweep's failure says torch's
    gradcheck passes, and the independent difference sides with 1/6."""
    x = torch.tensor([0.5], dtype=torch.float64, requires_grad=True)
    (grad,) = torch.autograd.grad(torch.nn.functional.hardsigmoid(x), x)
    assert grad.item() != 1 / 6 and abs(grad.item() * 6 - 1) > 1e-8   # the bug, by hand
    registry = TorchRegistry()
    entry = registry.get("nn.functional.hardsigmoid")
    sample = next(iter(registry.samples(entry, torch.float64)))
    settings = SimpleNamespace(registry=registry, checks=("reverse",),
                               policy=Policy(precise=True, engine="torch"))
    ((result, _),) = check_sample(entry, sample, torch.float64, settings)
    assert result.status == "failed"
    assert "passes this sample" in result.dispute
    assert "PyTorch formula bug" in result.dispute
    value = float(result.dispute.split("fourth-order difference ")[1].split(" ")[0])
    assert abs(value - 1 / 6) < 1e-10 < abs(value - grad.item())


def test_a_false_alarm_of_adcheck_is_named_as_such():
    """sin's derivative is cos; a report whose numerical side is off by 1e-6
    relative (adcheck wrong) is judged a false alarm of adcheck's."""
    x = torch.tensor([0.3, 1.1], dtype=torch.float64, requires_grad=True)
    true = math.cos(1.1)
    report = _report(0, 0, (1, 1), true * (1 + 1e-6), true, (2, 2))
    text = dispute(torch.sin, (x,), SLOW, "float64", report, "reproduce")
    assert "passes this sample" in text
    assert "false alarm of adcheck's" in text


def test_torch_failing_too_is_agreement():
    """A backward off by 1%: torch's own gradcheck fails it (checked here), and
    the dispute says both agree instead of offering evidence."""
    class Scaled(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x.cos() * 1.01
    x = torch.tensor([0.3, 1.1], dtype=torch.float64, requires_grad=True)
    assert not torch.autograd.gradcheck(Scaled.apply, (x,), raise_exception=False)
    report = _report(0, 0, (0, 0), math.cos(0.3), 1.01 * math.cos(0.3), (2, 2))
    text = dispute(Scaled.apply, (x,), SLOW, "float64", report, "reproduce")
    assert text.startswith("torch's gradcheck fails this sample too")


def test_a_kink_within_the_steps_is_not_decisive():
    """abs at 1e-5: the independent steps (about 1e-4) straddle the kink, the two
    steps disagree, and the evidence says it decides nothing."""
    x = torch.tensor([1e-5], dtype=torch.float64, requires_grad=True)
    report = _report(0, 0, (0, 0), 0.5, 1.0, (1, 1))
    text = dispute(torch.abs, (x,), SLOW, "float64", report, "reproduce")
    assert "not decisive. Reproduce: reproduce" in text


def test_only_double_precision_is_disputed():
    """torch's gradient tests run gradcheck in float64 and complex128 only."""
    x = torch.tensor([0.3], dtype=torch.float32, requires_grad=True)
    report = _report(0, 0, (0, 0), 1.0, 2.0, (1, 1))
    assert dispute(torch.sin, (x,), SLOW, "float32", report, "reproduce") is None


def test_logcumsumexp_forward_ad_float64_disputed_and_settled_for_adcheck():
    """The first element along the scanned dimension is its input: logcumsumexp's
    out[i, 0, k] = x[i, 0, k], a derivative of exactly 1. torch's reverse mode
    gives 1; its forward-mode jvp on op_db's second float64 sample (inputs of
    size up to 9 along the dimension) does not, by far more than rounding."""
    registry = TorchRegistry()
    entry = registry.get("logcumsumexp")
    sample = list(registry.samples(entry, torch.float64))[1]
    x = sample.input.detach()
    assert sample.args == (1,) and x.shape == (5, 5, 5)
    flat = 4 * 25 + 0 * 5 + 1          # x[4, 0, 1]: first along dim 1
    tangent = torch.zeros_like(x)
    tangent.view(-1)[flat] = 1
    import torch.autograd.forward_ad as fwad
    with fwad.dual_level():
        jvp = fwad.unpack_dual(torch.logcumsumexp(fwad.make_dual(x, tangent), 1)).tangent
    assert abs(jvp.view(-1)[flat].item() - 1) > 1e-9            # the bug, by hand
    leaf = x.clone().requires_grad_()
    (vjp,) = torch.autograd.grad(torch.logcumsumexp(leaf, 1), leaf, tangent)
    assert abs(vjp.view(-1)[flat].item() - 1) < 1e-15
    settings = SimpleNamespace(registry=registry, checks=("forward",),
                               policy=Policy(precise=True, engine="torch"))
    ((result, _),) = check_sample(entry, sample, torch.float64, settings)
    assert result.status == "failed" and f"[{flat}, {flat}]" in result.message
    assert "PyTorch formula bug" in result.dispute


def test_a_failure_at_an_explored_point_is_disputed_at_that_point():
    """nextafter's derivative in x is 1, but torch gives 0 where x == y. The
    sweep's quick pass finds that tie on sample 0, where the check itself
    passes; torch's gradcheck, run by hand at the tie, fails too. The dispute
    must say so, not report torch's verdict on the sample (which passes)."""
    zero = torch.tensor(0.0, dtype=torch.float64, requires_grad=True)
    other = torch.tensor(0.0, dtype=torch.float64, requires_grad=True)
    assert not torch.autograd.gradcheck(torch.nextafter, (zero, other), raise_exception=False)
    registry = TorchRegistry()
    entry = registry.get("nextafter")
    sample = next(iter(registry.samples(entry, torch.float64)))
    settings = SimpleNamespace(registry=registry, checks=("reverse",),
                               policy=Policy(precise=True, engine="torch", explore="quick"))
    ((result, _),) = check_sample(entry, sample, torch.float64, settings)
    assert result.status == "failed" and "explored point" in result.message
    assert "fails the explored point too" in result.dispute
    assert "this sample" not in result.dispute


class _WrongAwayFromZero(torch.autograd.Function):
    """``x ** 2`` whose backward is ``3 g x``: wrong everywhere but at 0."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return 3 * g * x


def _at_point(one_sided: bool):
    from adcheck.gradcheck.explore.point import Explored
    report = _report(0, 0, (0, 0), 1.0, 0.0, (2, 2))
    report.failures[0].point = Explored({0: np.zeros(2)}, "input0 = ...", one_sided)
    return report


def test_the_dispute_runs_torchs_gradcheck_at_the_explored_point():
    # the sample (1, -2): torch's gradcheck fails it (3 x against 2 x); at the
    # point (0, 0) both sides give 0 and it passes: what the line must report
    x = torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
    assert not torch.autograd.gradcheck(_WrongAwayFromZero.apply, (x,), raise_exception=False)
    sample = dispute(_WrongAwayFromZero.apply, (x,), SLOW, "float64",
                     _report(0, 0, (0, 0), 2.0, 3.0, (2, 2)), "reproduce")
    assert sample.startswith("torch's gradcheck fails this sample too")
    point = dispute(_WrongAwayFromZero.apply, (x,), SLOW, "float64", _at_point(False),
                    "reproduce")
    assert "passes the explored point" in point and "'reproduce with'" in point
    # at a kink one-sided derivatives decide, not the independent central difference
    sided = dispute(_WrongAwayFromZero.apply, (x,), SLOW, "float64", _at_point(True),
                    "reproduce")
    assert "one-sided derivatives above decide" in sided
    assert "fourth-order difference" not in sided
