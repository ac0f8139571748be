"""A function that raises a step away from the given inputs says so.

Finite differences count a step where the function raises as NaN (a step
that left the domain). A function on the simplex that refuses inputs not
summing to one was reported as "NaN or inf within a step of the given
inputs", its own error never shown (found on POT's emd2, whose
"a and b vector must have the same sum" was lost). The report now quotes
what it raised."""
from __future__ import annotations

import numpy as np
import pytest

import adcheck.refengine as E
from adcheck.gradcheck import check


def on_simplex(a):
    if abs(float(E.sum(a).item()) - 1.0) > 1e-9:
        raise ValueError("a must sum to 1")
    return E.sum(a * a)


def test_the_function_really_refuses_a_step():
    a = np.full(4, 0.25)
    on_simplex(E.tensor(a))
    step = a.copy()
    step[0] += 1e-6
    with pytest.raises(ValueError, match="a must sum to 1"):
        on_simplex(E.tensor(step))


def test_what_it_raised_is_quoted():
    a = E.tensor(np.full(4, 0.25), dtype=E.float64, requires_grad=True)
    report = check(on_simplex, (a,), precise=True)
    assert not report.passed
    assert report.failures[0].check == "nonfinite"
    assert ("the function raised ValueError (a must sum to 1) within a step of the given "
            "inputs") in report.failures[0].diagnosis


def test_a_function_not_finite_nearby_is_still_said_so():
    x = E.tensor(np.array([0.0, 1.0]), dtype=E.float64, requires_grad=True)
    report = check(E.log, (x,), precise=True)
    assert not report.passed
    assert "raised" not in report.message()
