"""``x + sin(x)`` far above a unit: a derivative with structure of a unit's
width (``cos(x)``) on a term whose size sets the output's rounding.

The first ladder's steps (fractions of the coordinate) average ``cos`` away
and give 1 with an estimate of 1e-9; the unit ladder's values were right
(within 3e-4) but its estimates, the output's rounding over its steps
(4e-2 to 2e-1 at 1e12), too wide to count as credible, so the first
ladder's 1 stood: at 1e12 the right formula failed and a backward missing
the ``cos`` term passed. Now one entry lying apart from the first ladder's
beyond both estimates hands the block to the unit ladder
(``numerics.secondladder.judged``), and a pass that resolved little says so,
one that resolved nothing is refused (``large.resolved.poorly_resolved``).

The expected derivative, 1 + cos(x), is mpmath's (50 digits), not adcheck's."""
from __future__ import annotations

import mpmath
import numpy as np
import pytest

import adcheck.refengine as E
from adcheck.gradcheck import check
from adcheck.gradcheck.errors import UncheckableError
from adcheck.refengine.autograd import Function


def _with_backward(k):
    """x + sin(x) whose backward is ``1 + k cos(x)``: right for k = 1."""
    class XSin(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x + E.sin(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * (1 + k * E.cos(x))
    return XSin.apply


def _inputs(scale, seed=0):
    values = np.random.default_rng(seed).standard_normal(6) * scale
    return E.tensor(values, dtype=E.float64, requires_grad=True), values


def _check(k, x):
    return check(_with_backward(k), (x,), precise=True, explore=False, seed=0)


def test_the_backward_is_what_mpmath_says_and_far_from_one():
    x, values = _inputs(1e12)
    with mpmath.workdps(50):
        exact = np.array([float(1 + mpmath.cos(mpmath.mpf(float(v)))) for v in values])
    assert np.allclose(np.cos(values) + 1, exact, rtol=1e-12, atol=1e-12)
    # the cos term is no rounding: the derivative is far from the first ladder's 1
    assert np.max(np.abs(exact - 1)) > 0.9


def test_the_right_formula_passes_at_1e12_saying_how_little_it_resolved():
    x, _ = _inputs(1e12)
    report = _check(1.0, x)
    assert report.passed, report.message()
    assert "resolved only errors above" in report.settled


@pytest.mark.parametrize("k", [0.0, 0.5, -1.0])
def test_a_backward_without_the_right_cos_term_fails_at_1e12(k):
    x, _ = _inputs(1e12)
    report = _check(k, x)
    assert not report.passed
    assert {f.check for f in report.failures} == {"reverse"}


def test_at_1e13_nothing_is_resolved_and_the_check_is_refused_not_passed():
    x, _ = _inputs(1e13)
    for k in (1.0, 0.0):
        with pytest.raises(UncheckableError, match="could not have failed"):
            _check(k, x)


def test_a_well_resolved_large_input_says_nothing_more():
    x, _ = _inputs(1e9)
    report = check(E.sin, (x,), precise=True, explore=False, seed=0)
    assert report.passed and report.settled is None
    assert report.cell_reach[1] < 1e-8
