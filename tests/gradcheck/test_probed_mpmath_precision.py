"""A probed check whatever precision the caller's mpmath works at.

The odds a probed check states (``large.probed.escape_odds``) use the median
of a chi-square, found by bisection in mpmath. Its tolerance follows
mpmath's working precision, so a program (or a test) that had set
``mpmath.mp.dps = 80`` made every probed check raise "Could not find root"
(found when the suite's order put such a test before the memory-ceiling
tests in one process)."""
from __future__ import annotations

import mpmath
import numpy as np
import pytest

import adcheck.refengine as E
from adcheck.gradcheck import check
from adcheck.gradcheck.large import probed


@pytest.fixture
def mpmath_at_80_digits():
    before = mpmath.mp.dps
    mpmath.mp.dps = 80
    probed.chi2_median_mean.cache_clear()    # (a value cached at another precision)
    yield
    mpmath.mp.dps = before


@pytest.mark.parametrize("count", [7, 64, 1000])
def test_the_chi_square_median_at_80_digits(mpmath_at_80_digits, count):
    m = probed.chi2_median_mean(count)
    # Wilson and Hilferty's cube approximation of the median (independent of the
    # bisection), within 2e-3 from 7 degrees of freedom on
    assert m == pytest.approx((1 - 2 / (9 * count)) ** 3, rel=2e-3)
    # and the definition: the chi-square's distribution function is one half there
    half = mpmath.gammainc(mpmath.mpf(count) / 2, 0, mpmath.mpf(m * count) / 2,
                           regularized=True)
    assert float(half) == pytest.approx(0.5, abs=1e-12)


def test_a_probed_check_at_80_digits(mpmath_at_80_digits):
    x = E.tensor(np.random.default_rng(0).standard_normal(300), dtype=E.float64,
                 requires_grad=True)
    report = check(E.sin, (x,), jacobian="probed", precise=True, seed=0, explore=False)
    assert report.passed and report.plan == "probed", report.message()
    assert report.escape
