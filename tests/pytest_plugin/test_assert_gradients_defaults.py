"""``assert_gradients`` has the command line's defaults (issue 28, item 7):
precise tolerances, and second order where the function has a double backward.

``gradcheck.check`` keeps torch's gradcheck defaults (API.md: fixed tolerances,
first order); the README says why and what the other defaults cost.
"""
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from adcheck.gradcheck import check  # noqa: E402
from pytest_adcheck import assert_gradients  # noqa: E402

sys.path.insert(0, str(Path(__file__).parents[1] / "cli" / "fixtures"))
from second_order import DetachedSiLU, NumpySin, SiLU  # noqa: E402


class SlightlyOffSin(torch.autograd.Function):
    """The derivative off by 1e-6 of itself: under torch's rtol, above rounding."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.cos() * (1 + 1e-6)


def _x():
    return torch.tensor([-1.2, -0.2, 0.5, 1.7], dtype=torch.float64, requires_grad=True)


def test_precise_by_default_catches_what_fixed_tolerances_let_through():
    assert check(SlightlyOffSin.apply, (_x(),)).passed      # torch's atol/rtol
    with pytest.raises(AssertionError, match="differs from numerical"):
        assert_gradients(SlightlyOffSin.apply, _x())
    assert_gradients(SlightlyOffSin.apply, _x(), precise=False, order=1)


def test_second_order_checked_by_default():
    with pytest.raises(AssertionError, match="reverse-over-reverse"):
        assert_gradients(DetachedSiLU.apply, _x())
    assert_gradients(DetachedSiLU.apply, _x(), order=1)
    assert_gradients(SiLU.apply, _x())


def test_no_double_backward_is_not_a_failure():
    report = assert_gradients(NumpySin.apply, _x())
    assert report.passed and report.order == 1


class WrongJvpSin(torch.autograd.Function):
    """Right backward, jvp off by a factor 2: only forward mode shows it."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.cos()

    @staticmethod
    def jvp(ctx, tangent):
        (x,) = ctx.saved_tensors
        return 2 * tangent * x.cos()


def test_forward_mode_where_the_function_has_a_rule():
    x = _x()
    y = WrongJvpSin.apply(x)
    with torch.autograd.forward_ad.dual_level():
        dual = torch.autograd.forward_ad.make_dual(x.detach(), torch.ones(4, dtype=x.dtype))
        tangent = torch.autograd.forward_ad.unpack_dual(WrongJvpSin.apply(dual)).tangent
    assert torch.allclose(tangent, 2 * x.detach().cos())      # the planted factor, by torch
    assert torch.allclose(torch.autograd.grad(y.sum(), x)[0], x.detach().cos())
    with pytest.raises(AssertionError, match="forward-mode"):
        assert_gradients(WrongJvpSin.apply, _x(), order=1)
    assert_gradients(WrongJvpSin.apply, _x(), order=1, check_forward_ad=False)
    assert_gradients(SiLU.apply, _x(), order=1)    # no jvp: forward mode left out
