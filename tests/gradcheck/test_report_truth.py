"""A report's truth is whether its check passed: ``assert check(f, x)`` fails
where the check fails, as ``assert torch.autograd.gradcheck(f, x)`` does
(a failing report was truthy, so such an assert never failed)."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch)")

from adcheck.gradcheck import check  # noqa: E402


class Cube(torch.autograd.Function):
    factor = 3.0

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * Cube.factor * x * x


class WrongCube(Cube):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2.0 * x * x


def _x():
    return torch.tensor([0.5, -1.5, 2.0], dtype=torch.float64, requires_grad=True)


def test_a_failing_report_is_false_and_its_assert_fails():
    report = check(WrongCube.apply, (_x(),), seed=0, explore=False)
    assert not report.passed and not bool(report)
    with pytest.raises(AssertionError):
        assert check(WrongCube.apply, (_x(),), seed=0, explore=False)


def test_a_passing_report_is_true():
    assert check(Cube.apply, (_x(),), seed=0, explore=False)


def test_torch_agrees_on_both():
    assert torch.autograd.gradcheck(Cube.apply, (_x(),))
    assert not torch.autograd.gradcheck(WrongCube.apply, (_x(),), raise_exception=False)
