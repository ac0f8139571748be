"""check(..., reference=...) with an mpmath reference: the reference decides,
and the report says whether finite differences would have agreed. The
functions under check run on each engine (the ``E`` fixture)."""
from __future__ import annotations

import gradcheck_zoo as zoo
import mpmath
import numpy as np
import pytest

from adcheck.gradcheck import GradcheckError, check


def mp_map(fn):
    return lambda x: np.vectorize(fn, otypes=[object])(x)


X = [0.3, -1.7, 2.9]


def leaf(E, values):
    return E.from_numpy(np.array(values)).requires_grad_()


@pytest.mark.parametrize("values", [X, [0.3 + 0.4j, -1.0 + 0.2j]], ids=["float64", "complex128"])
def test_reference_catches_1e_6_and_accepts_the_correct_op(E, values):
    x = leaf(E, values)
    ref = mp_map(mpmath.sin)
    correct = check(E.sin, (x,), reference=ref, precise=True, check_forward_ad=True)
    assert correct.passed, correct.message()
    if not np.iscomplexobj(values):
        wrong = check(zoo.scaled_vjp_sin(E, 1 + 1e-6), (x,), reference=ref, precise=True)
        assert not wrong.passed and "1.000001 times" in wrong.diagnosis
        assert wrong.failures[0].against == "reference"


def test_reference_settles_what_finite_differences_get_wrong(E):
    # x**2 + 1e12: rounding of the large constant swamps a central difference at eps=1e-6
    x = leaf(E, [0.5, -0.25])
    func = lambda x: x * x + 1e12  # noqa: E731
    ref = mp_map(lambda v: v ** 2 + mpmath.mpf(10) ** 12)
    assert not check(func, (x,)).passed, "plain finite differences raise a false alarm here"
    assert check(func, (x,), reference=ref).passed
    assert check(func, (x,), precise=True).passed, "Richardson's noise estimate absorbs it"


def test_failure_against_the_reference_says_the_formula_is_wrong(E):
    report = check(zoo.scaled_vjp_sin(E, -1.0), (leaf(E, X),), reference=mp_map(mpmath.sin))
    assert "the reverse-mode formula is wrong" in report.failures[0].detail


def test_reference_with_the_wrong_output_shape_is_named(E):
    ref = lambda x: mp_map(mpmath.sin)(x)[:2]  # noqa: E731
    with pytest.raises(ValueError, match="output 0 has 2 elements, the function's has 3"):
        check(E.sin, (leaf(E, X),), reference=ref)


def test_reference_that_raises_is_named(E):
    def ref(x):
        return np.sin(x)  # NumPy cannot take mpf object arrays
    with pytest.raises(GradcheckError, match="the mpmath reference raised"):
        check(E.sin, (leaf(E, X),), reference=ref)
