"""A second-order check's all-zero block is said of its function, the first
derivative, and of the double backward: "the function does not use this
input" was said of functions that plainly do (the first derivative of a
linear function is constant in its input; a double backward may still
return a nonzero second derivative there)."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch)")

from adcheck.gradcheck import check  # noqa: E402


class Doubled(torch.autograd.Function):
    """2 x, its backward right at first order, but it carries a term 0.5 (x - x)
    whose double backward is 0.5 where the true second derivative is 0."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 2.0

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2.0 + 0.5 * (x - x.detach())


class Ignores(torch.autograd.Function):
    """A constant of x, with a backward that returns a gradient all the same."""

    @staticmethod
    def forward(ctx, x):
        return torch.ones_like(x)

    @staticmethod
    def backward(ctx, g):
        return g * 1.0


def _x():
    return torch.tensor([0.3, -1.2, 2.0], dtype=torch.float64, requires_grad=True)


def test_a_second_derivative_where_the_gradient_is_constant_names_the_first_derivative():
    report = check(Doubled.apply, (_x(),), order=2, seed=0, explore=False)
    (failure,) = [r for r in report.failures if r.in_idx == 0]
    assert "the first derivative does not change with this input" in failure.diagnosis
    assert "double backward returns a second derivative" in failure.diagnosis
    assert "the function does not use this input" not in failure.diagnosis


def test_the_gradient_is_constant_and_the_double_backward_is_not():
    x = _x()
    (g,) = torch.autograd.grad(Doubled.apply(x).sum(), x, create_graph=True)
    (gg,) = torch.autograd.grad(g.sum(), x)
    assert torch.equal(g.detach(), torch.full((3,), 2.0, dtype=torch.float64))
    assert torch.equal(gg, torch.full((3,), 0.5, dtype=torch.float64))


def test_the_first_order_words_are_unchanged():
    report = check(Ignores.apply, (_x(),), seed=0, explore=False)
    (failure,) = [r for r in report.failures if r.check == "reverse"]
    assert "the function does not use this input" in failure.diagnosis
