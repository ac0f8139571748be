"""A check under the caller's ``np.seterr(all="raise")``.

adcheck's arithmetic meets underflow, inf and NaN at extreme inputs and tests
for them itself. A test suite that had set NumPy to raise on floating-point
errors got FloatingPointError out of adcheck's own code: every check with
``explore=True`` (its points reach 1e-300), and any precise check at 1e-300.
Under that setting a check now gives the verdict it gives under NumPy's
defaults, and the caller's setting is as it was afterwards."""
from __future__ import annotations

import numpy as np
import pytest

import adcheck.refengine as E
from adcheck import gradcheck
from adcheck.gradcheck import check

RAISE = {"divide": "raise", "over": "raise", "under": "raise", "invalid": "raise"}


def _x(values):
    return E.tensor(np.array(values), dtype=E.float64, requires_grad=True)


@pytest.mark.parametrize("func, values", [
    (E.log, [3e-300, 1e-300, 7e-301]),
    (lambda x: E.sqrt(x * x + 1e-300), [0.0, 1e-160, -2e-155]),
    (E.exp, [-700.0, -745.0, 1.0]),
])
def test_a_precise_check_under_raise_gives_the_default_verdict(func, values):
    expected = check(func, (_x(values),), precise=True, seed=0, explore=False)
    with np.errstate(**RAISE):
        got = check(func, (_x(values),), precise=True, seed=0, explore=False)
        assert np.geterr() == RAISE     # the caller's setting stands after the check
    assert got.passed == expected.passed and got.message() == expected.message()


def test_the_full_explore_search_under_raise():
    # its points reach 1e-300 and 1e300: every check with explore=True raised
    with np.errstate(**RAISE):
        report = check(E.sin, (_x([0.5, -1.5, 2.0]),), precise=True, seed=0, explore=True,
                       explore_budget=1.0)
    assert report.passed and report.counts["explore"]["tried"] > 3


def test_the_public_jacobians_under_raise():
    x = [3e-300, 1e-300, 7e-301]
    expected = gradcheck.numerical_jacobian(E.log, (_x(x),), precise=True)
    with np.errstate(**RAISE):
        got = gradcheck.numerical_jacobian(E.log, (_x(x),), precise=True)
        reverse = gradcheck.reverse_jacobian(E.log, (_x(x),))
    np.testing.assert_array_equal(got[0, 0], expected[0, 0])
    # and both are the closed form 1 / x on the diagonal, to the estimate
    np.testing.assert_allclose(np.diag(got[0, 0]), 1 / np.array(x), rtol=1e-6)
    np.testing.assert_allclose(np.diag(reverse[0, 0]), 1 / np.array(x), rtol=1e-15)


def test_a_torch_check_under_raise():
    torch = pytest.importorskip("torch", reason="the case is a torch function's check")
    x = torch.tensor([3e-300, 1e-300, 7e-301], dtype=torch.float64, requires_grad=True)
    expected = check(torch.log, (x,), precise=True, seed=0, explore=False)
    with np.errstate(**RAISE):
        got = check(torch.log, (x,), precise=True, seed=0, explore=False)
    assert got.passed and got.message() == expected.message()
