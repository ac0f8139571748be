"""Two diagnoses that named a cause the evidence did not show.

- "every entry of the vjp is a float32 number: the function computes in
  float32 inside" for an error of order 1: a circular filter whose backward
  drops its wrap-around terms, and whose Jacobian entries are its float32
  taps (pytorch_wavelets' DWT in symmetric mode read so). A cast inside
  makes errors of that dtype's rounding, not of the entries' own size.
- "analytical holds only whole numbers where numerical does not: the vjp
  rounds its result" for a right derivative of zeros and ones (roma's
  small-angle branch I + [x]x at rotation vectors of 1e-8, whose differences
  are off by 1e-8), or a backward returning a constant matrix of ones and
  zeros by design (pypose's tangent-space gradients). Nothing was rounded:
  the numerical entries are all nearly whole, or the analytical ones are not
  the numerical ones made whole.

torch's gradcheck is the independent judge that each formula is wrong (or
right); the wording is what is under test, against the cause built in.
"""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from adcheck.gradcheck import check  # noqa: E402
from adcheck.gradcheck.verdict.diagnosis import diagnose  # noqa: E402

TAPS = torch.tensor([0.48296291314453416, 0.8365163037378079, 0.22414386804201339,
                     -0.12940952255126037], dtype=torch.float32).double()   # db2's, in float32


class CircularFilter(torch.autograd.Function):
    """y[n] = sum_k taps[k] x[(n + k) mod N], whose backward forgets the wrap."""

    @staticmethod
    def forward(ctx, x):
        return sum(TAPS[k] * torch.roll(x, -k) for k in range(len(TAPS)))

    @staticmethod
    def backward(ctx, g):
        n = g.shape[0]
        out = torch.zeros_like(g)
        for k in range(len(TAPS)):
            out[k:] += TAPS[k] * g[:n - k]       # wrong: the terms that wrap are dropped
        return out


def test_an_error_of_order_one_is_not_a_cast_inside():
    x = torch.randn(6, dtype=torch.float64, requires_grad=True)
    assert not torch.autograd.gradcheck(CircularFilter.apply, (x,), raise_exception=False)
    report = check(CircularFilter.apply, (x,), precise=True, explore=False, seed=0)
    (failure,) = report.failures
    assert failure.max_error > 0.1
    assert "float32" not in (failure.diagnosis or "")


def test_a_cast_inside_is_still_named():
    class SquareInFloat32(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return (2 * x * g).float().double()     # the vjp rounded to float32
    x = torch.tensor(np.random.default_rng(0).uniform(0.5, 2.0, (3, 4)), requires_grad=True)
    report = check(SquareInFloat32.apply, (x,), precise=True, explore=False, seed=0)
    assert not report.passed
    assert "computes in float32 inside" in report.failures[0].diagnosis


def _diagnosis(expected, actual, tol=1e-9):
    expected, actual = np.atleast_2d(expected), np.atleast_2d(actual)
    return diagnose(expected, actual, np.full(expected.shape, tol), "reverse", False, False) or ""


def test_right_zeros_and_ones_against_differences_off_by_a_little_are_not_rounding():
    exact = np.array([[1.0, 0.0, -1.0], [0.0, 1.0, 0.0]])
    assert "whole numbers" not in _diagnosis(exact + 1e-8, exact)


def test_a_constant_matrix_that_is_not_the_differences_made_whole_is_not_rounding():
    numerical = np.array([[0.37, 1.62, -0.2], [2.4, 0.1, 0.9]])
    assert "whole numbers" not in _diagnosis(numerical, np.array([[1.0, 0, 0], [0, 1.0, 0]]))


@pytest.mark.parametrize("whole", [np.round, np.floor, np.trunc])
def test_a_derivative_made_whole_is_still_named(whole):
    numerical = np.array([[0.37, 1.62, -0.2], [2.4, 0.1, 0.9]])
    assert "whole numbers" in _diagnosis(numerical, whole(numerical))


def test_an_epsilon_in_a_denominator_is_named_beside_a_float32_constant():
    # jaxopt's isotonic regression divides by a block's size + 1e-8: the factor is
    # 1 / (1 + 1e-8), which was put down to a float32 constant alone
    numerical = np.array([[0.37, 1.62, -0.2], [2.4, 0.1, 0.9]])
    said = _diagnosis(numerical, numerical / (1 + 1e-8), tol=1e-12)
    assert "an epsilon of 1e-08 added to a denominator of 1" in said
    # torch's hardsigmoid backward multiplies by float32(1/6): no power of ten
    sixth = float(np.float32(1 / 6)) * 6
    said = _diagnosis(numerical, numerical * sixth, tol=1e-12)
    assert "written in float32" in said and "an epsilon of" not in said
