"""A double backward that is NaN where the second derivative exists fails when
explored (found on kymatio's ModulusStable).

The one-sided verdicts of a second-order check evaluate the first derivative,
which calls autograd: they must evaluate it as the check does (leaves that
require grad, grad on) and with the grad_outputs the check drew. Evaluated
under no_grad, every one-sided step raised, no bracket formed, and every
failing point was "not differentiable": x**3 / 3 whose double backward is NaN
at 0 (where the second derivative is 2x = 0) passed. With other grad_outputs
the quotients were of another function: relu(x)**2 / 2, whose first
derivative has a kink at 0, failed there."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from adcheck.gradcheck import check  # noqa: E402


class Cube(torch.autograd.Function):
    """x**3 / 3, right at first order; its backward's torch.where has a NaN
    gradient in the branch it does not take at x == 0 (0 * NaN)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3 / 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * torch.where(x == 0, torch.zeros_like(x), x ** 3 / x)


def _randn(*shape, positive=False):
    x = torch.randn(*shape, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    return (x.abs() + 0.1 if positive else x).requires_grad_()


def test_the_nan_is_real_and_the_second_derivative_finite():
    x = torch.tensor([0.0, 1.0, -2.0], dtype=torch.float64, requires_grad=True)
    with pytest.raises(Exception):
        torch.autograd.gradgradcheck(Cube.apply, (x,))
    assert torch.autograd.gradcheck(Cube.apply, (x,))
    (g,) = torch.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    (h,) = torch.autograd.grad(g.sum(), x)
    assert torch.isnan(h[0])
    (g,) = torch.autograd.grad((x ** 3 / 3).sum(), x, create_graph=True)
    (h,) = torch.autograd.grad(g.sum(), x)
    assert torch.equal(h, 2 * x.detach())    # 0 at x == 0, finite everywhere


@pytest.mark.parametrize("explore", ["quick", True])
def test_a_nan_double_backward_at_an_explored_zero_fails(explore):
    x = _randn(3, 4)
    assert check(Cube.apply, (x,), order=2, precise=True, explore=False, seed=0).passed
    # (a budget no loaded machine runs out of: the quick pass takes 4 s here, and with
    # 10 s it timed out at the zero while a full test session ran beside it)
    report = check(Cube.apply, (x,), order=2, precise=True, explore=explore,
                   explore_budget=120, seed=0)
    assert not report.passed
    message = report.message()
    assert "at the explored point exact zero" in message, message
    assert "NaN" in message and "reproduce with" in message, message
    assert len(report.counts["explore"]["findings"]) == 1


def _relu_squared(x):
    return torch.relu(x) ** 2 / 2


@pytest.mark.parametrize("order, func, positive", [
    (1, torch.abs, False), (1, torch.relu, False), (1, torch.sqrt, True),
    (2, torch.abs, False), (2, _relu_squared, False), (2, torch.sqrt, True)],
    ids=["abs", "relu", "sqrt", "abs-2", "relu_squared-2", "sqrt-2"])
def test_points_that_are_not_differentiable_stay_excused(order, func, positive):
    report = check(func, (_randn(3, 4, positive=positive),), order=order, precise=True,
                   explore=True, explore_budget=1.5, seed=0)
    assert report.passed, report.message()
    tally = report.counts["explore"]
    # the zeros were met and excused, not merely never reached
    assert tally["kinks"] + tally["not_differentiable"] + tally["outside_domain"] > 0, tally
