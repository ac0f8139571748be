"""A failed probed check of a narrower formula is judged again on whole
Jacobians when they are small (``api._settled_densely``): their verdict
stands and the report says what the probed cells found. A wrong second
derivative in bfloat16 is still failed (torch's own float64 gradgradcheck is
the independent judge of the planted bug); a right one passes.
"""
import pytest

torch = pytest.importorskip("torch", reason="the planted formulas are torch Functions; "
                            "torch is not installed")

from adcheck import gradcheck  # noqa: E402
from adcheck.gradcheck.api import SETTLE_COORDINATES  # noqa: E402


def _sine(factor):
    """sin, whose second derivative is ``factor`` times the true one (its backward
    calls a cos whose own backward is scaled)."""
    class Cos(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.cos()

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return -grad * x.sin() * factor

    class Sin(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * Cos.apply(x)

    return Sin.apply


def _probed(func, shape, seed=3):
    x = (torch.rand(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
         * 4 - 2).to(torch.bfloat16).requires_grad_()
    return gradcheck.check(func, (x,), order=2, precise=True, jacobian="probed", probes=8,
                           check_batched_grad=False, seed=seed)


def test_the_planted_wrong_second_derivative_is_wrong_by_torch_too():
    x = torch.rand(6, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(_sine(1.5), (x,))        # the first derivative is right
    assert not torch.autograd.gradgradcheck(_sine(1.5), (x,), raise_exception=False)
    assert torch.autograd.gradgradcheck(_sine(1.0), (x,))


def test_a_wrong_bfloat16_second_derivative_still_fails_on_whole_jacobians():
    report = _probed(_sine(1.5), (6, 5))
    assert not report.passed
    assert report.plan == "dense"          # small: judged again entry by entry
    assert "probed along 8 directions" in report.settled
    assert report.settled.endswith("failed too")
    assert "failed too" in report.message()


def test_a_right_bfloat16_second_derivative_passes():
    report = _probed(_sine(1.0), (6, 5))
    assert report.passed, report.message()
    # (passed probed, or failed probed and passed dense: either says why)
    assert report.plan == "probed" or "passed" in report.settled


def test_whole_jacobians_too_large_leave_the_probed_verdict_and_its_window():
    rows = SETTLE_COORDINATES // 2 // 16 + 1      # inputs and grad_outputs: over the limit
    report = _probed(_sine(1.5), (rows, 16))
    assert not report.passed
    assert report.plan == "probed" and report.settled is None
    # the window around the failing cell is differenced on the float64 run: the
    # bfloat16 input moved off its grid once read as an input changed in place
    assert {f.check for f in report.failures} <= {"reverse", "forward"}
    for failure in report.failures:
        # d(backward)/dx is diagonal (elementwise sin); the planted factor is there only
        assert failure.in_idx == 0 and failure.where[0] == failure.where[1]
        assert "the entry located by bisection" in failure.detail
        assert "1.5" in failure.diagnosis or "constant factor" in failure.diagnosis
