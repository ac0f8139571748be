"""A formula right where its input is positive and of the wrong sign where it
is negative: the derivative of a function of ``|x|`` (``abs``, ``sgn``, a
division by a modulus). ``adcheck check torch:polar`` failed on its default
inputs with no diagnosis at all: torch's polar backward divides by the
result's modulus, and documents negative ``abs`` as outside its domain. Such
a failure now names the shape (wrong sign exactly at the negative entries)
and both ways out."""
from __future__ import annotations

import numpy as np
import pytest

from adcheck import refengine as E
from adcheck.gradcheck import check
from adcheck.refengine.autograd import Function


class Square(Function):
    """x * x with the backward of |x| * |x|, or the right one."""

    right = False

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @classmethod
    def backward(cls, ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * g * (x if cls.right else x.abs())


class RightSquare(Square):
    right = True


class AlmostSquare(Square):
    """|x| in the backward, and a small error besides."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * g * x.abs() * 1.01


def _inputs(seed=0):
    values = np.random.default_rng(seed).standard_normal((3, 4))
    assert (values < 0).any() and (values > 0).any()
    return E.tensor(values, requires_grad=True), int((values < 0).sum())


def test_a_backward_of_abs_is_said_to_be_wrong_at_the_negative_entries():
    x, negatives = _inputs()
    report = check(Square.apply, (x,), explore=False)
    (failure,) = report.failures
    assert failure.diagnosis.startswith(
        f"the vjp has the wrong sign at the {negatives} entries of input 0 that are negative")


def test_the_right_backward_passes_and_a_different_error_is_not_so_named():
    x, _ = _inputs()
    assert check(RightSquare.apply, (x,), explore=False).passed
    (failure,) = check(AlmostSquare.apply, (x,), explore=False).failures
    assert "negative" not in (failure.diagnosis or "")


def test_at_positive_inputs_the_same_backward_passes():
    x = E.tensor(np.random.default_rng(1).uniform(0.1, 1.0, (3, 4)), requires_grad=True)
    assert check(Square.apply, (x,), explore=False).passed


def test_torch_polar_at_negative_abs():
    torch = pytest.importorskip("torch", reason="torch's polar (pip install torch)")
    rng = np.random.default_rng(2)
    modulus = torch.tensor(rng.standard_normal((2, 3)), requires_grad=True)
    angle = torch.tensor(rng.standard_normal((2, 3)), requires_grad=True)
    report = check(torch.polar, (modulus, angle), explore=False)
    (failure,) = report.failures
    assert failure.in_idx == 0 and "wrong sign at the" in failure.diagnosis
    positive = torch.tensor(rng.uniform(0.1, 1.0, (2, 3)), requires_grad=True)
    assert check(torch.polar, (positive, angle), explore=False).passed
