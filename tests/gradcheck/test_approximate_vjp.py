"""A vjp that is linear in its grad_output only to a solver's tolerance.

torchdiffeq's adjoint (odeint_adjoint, dopri5 at rtol 1e-10) solves the
adjoint ODE with steps its error control sets from the adjoint state, that
is from the grad_output: scaling the grad_output by -2.5 moved the vjp by
1e-11 of its size, and the scaling check said "the formula ignores the
grad_output, takes its abs(), or adds a term that does not multiply it",
the words for a formula off by the whole product. An error that small is
now named as an approximate vjp's; a backward that squares its grad_output
keeps the old words."""
from __future__ import annotations

import numpy as np

from adcheck import refengine as E
from adcheck.gradcheck import check
from adcheck.refengine.autograd import Function


def _sin_with(nonlinear):
    class Sin(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return E.sin(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * E.cos(x) * (1 + nonlinear * g * g)
    return Sin


def _x():
    return E.tensor(np.array([0.3, -1.2, 2.0, 0.7]), requires_grad=True)


def _scaling_failures(nonlinear):
    report = check(_sin_with(nonlinear).apply, (_x(),), seed=0, explore=False)
    return [f for f in report.failures if f.check == "scaling"]


def test_a_vjp_linear_to_a_tolerance_is_named_approximate():
    # |g| of the scaling probe is below 1, SCALE is -2.5: (1 + 1e-10 g^2) moves the
    # product by about 1e-10 of its size, far above rounding, far below a formula's
    (failure,) = _scaling_failures(1e-10)
    assert "approximate vjp" in failure.diagnosis and "solver's tolerance" in failure.diagnosis


def test_a_backward_that_squares_its_grad_output_keeps_the_formula_words():
    (failure,) = _scaling_failures(1.0)
    assert failure.diagnosis.startswith("not scaled by grad_output")
