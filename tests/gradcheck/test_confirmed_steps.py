"""Kinks of the second derivative within the first steps' reach can make the
central quotients follow ``L + c h**2`` there with ``L`` not the derivative:
every extrapolation of those steps agrees with the others, and a right
gradient failed (zuko's UNAF harvested, 6.2e-11 off against a tolerance of
3.1e-11). ``numerics.confirmed`` differences such a column at every step and
lets the smaller ones, which no longer reach a kink, overrule the wide ones.

The quotients here come from a model solved by hand, not from the code:
``u -> J (u - delta)**2 / 2`` for ``u > delta`` (0 below) has a second
derivative jumping by ``J`` at ``delta`` and adds ``J (h - delta)**2 / (4 h)``
to the central quotient at 0 once ``h > delta`` (nothing to the derivative at
0). Three such kinks with ``J = (1, -2, 1) J0`` at ``delta = (1, 5, 7) d`` add
nothing growing like ``h`` or ``1 / h``: a constant ``J0 d`` at every step
wider than ``7 d``, less and less below, nothing below ``d``.
"""
import numpy as np
import pytest

from adcheck.gradcheck.numerics.confirmed import confirmed
from adcheck.gradcheck.numerics.precise import SAFETY
from adcheck.gradcheck.numerics.richardson import FIRST_LEVELS, LEVELS, extrapolate

KINKS = ((1.0, 1.0), (-2.0, 5.0), (1.0, 7.0))   # (J / J0, delta / d)


def _quotients(derivative, curvature, j0, d, h0, noise=1e-17):
    """Central quotients at ``h0 * 2**-k`` (k < LEVELS) of a smooth function with
    the three kinks, and their rounding noise, as the tableau takes them."""
    diffs, noises = [], []
    for k in range(LEVELS):
        h = h0 * 2.0 ** -k
        bias = sum(j * j0 * (h - s * d) ** 2 / (4 * h) for j, s in KINKS if h > s * d)
        diffs.append(np.array([[derivative + curvature * h * h + bias]]))
        noises.append(np.array([[noise / h]]))
    return diffs, noises


def test_the_premise_the_first_steps_agree_on_a_value_off_the_derivative():
    diffs, noises = _quotients(0.5, 0.3, 1e-3, 1e-4, 1 / 32)
    best, estimate = extrapolate(diffs[:FIRST_LEVELS], noises[:FIRST_LEVELS])
    assert best.item() - 0.5 == pytest.approx(1e-7, rel=1e-3)   # J0 d
    assert SAFETY * estimate.item() < 1e-9                       # and sure of it


@pytest.mark.parametrize("j0, d", [(1e-3, 1e-4), (-4e-4, 3e-5), (1e-2, 2e-5)])
def test_confirmed_steps_find_the_derivative(j0, d):
    diffs, noises = _quotients(0.5, 0.3, j0, d, 1 / 32)
    best, estimate = confirmed(diffs, noises)
    assert abs(best.item() - 0.5) <= SAFETY * estimate.item()
    assert abs(best.item() - 0.5) < 1e-3 * abs(j0 * d)
    assert estimate.item() < 1e-2 * abs(j0 * d)


@pytest.mark.parametrize("curvature", [0.3, -2.0, 40.0])
def test_a_smooth_column_keeps_its_estimate(curvature):
    # no kink: the deeper entries only confirm, and the estimate stays of the
    # size extrapolate gives (the tolerance of a smooth column does not grow)
    diffs, noises = _quotients(1.25, curvature, 0.0, 1e-4, 1 / 8)
    plain, plain_estimate = extrapolate(diffs, noises)
    best, estimate = confirmed(diffs, noises)
    assert abs(best.item() - 1.25) <= SAFETY * estimate.item()
    assert estimate.item() <= 4 * plain_estimate.item() + 1e-15


def test_deeper_steps_that_agree_count_below_their_noise_bound():
    # the propagated noise bound of the deep quotients (the output's largest
    # rounding) can exceed the bias itself; quotients that agree with each other
    # far more closely still contradict the wide steps' value, in a row whose
    # coordinates are of a plain size (``agreed``)
    diffs, noises = _quotients(0.5, 0.3, 1e-3, 1e-4, 1 / 32, noise=1e-12)
    assert noises[-1].item() > 1e-7   # (the bound at the smallest step: above J0 d)
    best, estimate = confirmed(diffs, noises, agreed=np.array([True]))
    assert abs(best.item() - 0.5) < 1e-3 * 1e-7
    assert abs(best.item() - 0.5) <= SAFETY * estimate.item()
