"""Term 5 of the low-precision allowance at a root of the derivative.

Term 5 allows a formula to be the derivative at a point whose output is the
rounded one: the input moved until the output moves by its rounding ``d``.
At a root of the derivative (J = 0) the first-order move ``d / |J|`` is
infinite, and only the cap (the input's magnitude) bounded it: the
allowance there was ``|H| L``, and a float32 formula off by 0.2 at the root
of ``(x - 1)**2`` passed with a stated resolution of 3e-6. The output moves
by ``d`` within ``sqrt(2 d / |H|)`` at second order; the move is now the
smaller of the two.
"""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from adcheck.gradcheck import check  # noqa: E402
from adcheck.gradcheck.core.jacobian import Jacobian, Layout  # noqa: E402
from adcheck.gradcheck.lowprec.lowprecision import output_terms  # noqa: E402

DTYPES = (torch.float32, torch.bfloat16, torch.float16)


class Square(torch.autograd.Function):
    """``(x - 1)**2``; ``at_root`` is added to its derivative where x == 1."""

    at_root = 0.0

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x - 1) ** 2

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (2 * (x - 1) + Square.at_root * (x == 1))


@pytest.fixture
def square():
    yield Square
    Square.at_root = 0.0


def _inputs(dtype):
    return torch.tensor([1.0, 0.5, 1.5, 2.0, -1.0, 1.0078125], dtype=dtype, requires_grad=True)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_a_formula_wrong_at_the_root_of_its_derivative_fails(square, dtype):
    square.at_root = 0.2
    report = check(square.apply, (_inputs(dtype),), precise=True)
    (reverse,) = [r for r in report.results if r.check == "reverse"]
    assert not reverse.passed
    assert reverse.precision.resolution < 0.2 / 2     # (the block's largest entry is 2)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_the_right_formula_passes_at_and_beside_the_root(square, dtype):
    report = check(square.apply, (_inputs(dtype),), precise=True)
    assert report.passed, report


@pytest.mark.parametrize("d", [1e-8, 1e-4, 0.25])
def test_the_move_at_a_root_is_the_second_order_one(d):
    """For y = x**2 at x = 0 (J = 0, H = 2), the derivative at the point whose
    output is y + d, x' = sqrt(d), is 2 sqrt(d): term 5 is that, exactly."""
    layout = Layout({0: (1,)}, {0: False}, {0: (1,)}, {0: False})
    jac = Jacobian("numerical", layout, {(0, 0): np.array([[0.0]])})
    terms = output_terms(jac, {(0, 0): np.array([[2.0]])}, {0: np.array([d])},
                         {0: np.array([10.0])})
    assert terms[0, 0][0, 0] == pytest.approx(2 * np.sqrt(d), rel=1e-12)


def test_an_unknown_curvature_still_bounds_nothing():
    """A NaN second difference (the function undefined beside the point) leaves
    the entry an infinite allowance, in a real block and in a complex pair."""
    layout = Layout({0: (1,)}, {0: False}, {0: (1,)}, {0: False})
    jac = Jacobian("numerical", layout, {(0, 0): np.array([[0.5]])})
    terms = output_terms(jac, {(0, 0): np.array([[np.nan]])}, {0: np.array([1e-3])},
                         {0: np.array([1.0])})
    assert terms[0, 0][0, 0] == np.inf
    paired = Layout({0: (1,)}, {0: True}, {0: (1,)}, {0: True})
    jac = Jacobian("numerical", paired, {(0, 0): np.full((2, 2), 0.5)})
    terms = output_terms(jac, {(0, 0): np.full((2, 2), np.nan)}, {0: np.full(2, 1e-3)},
                         {0: np.ones(2)}, paired=frozenset({(0, 0)}))
    assert np.all(terms[0, 0] == np.inf)
