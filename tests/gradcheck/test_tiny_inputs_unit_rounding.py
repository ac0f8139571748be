"""A false alarm of ours, found on geoopt: outputs of 1e-8 made from
intermediates of the size of 1 carry those intermediates' rounding in absolute
terms. geoopt writes ``artanh(r)`` as ``(log(1 + r) - log(1 - r)) / 2``, and at
``r`` of 1e-8 ``1 + r`` rounds to within 1.1e-16, about 1e8 ulps of the
result. The noise floor measured that rounding, but its cap (ulps of the
output's own size) took it off; Richardson's small-coordinate ladder then took
the steps that cross a few stairs of ``1 + r`` for a jump and kept the steps
inside one stair, where the quotients settle on a wrong value (0 for the
elementwise form, whose ``1 + r`` does not move; ``1 - y**2 / r**2`` for
``logmap0``'s ``y artanh(r) / r``). Now the measured rounding above the cap,
within ``noisefloor.CAP_ULPS`` ulps of 1, is the noise of each step whose widest
step resolves the slope (``stairs.unit_noise``), and the wide steps are kept.
Judged by mpmath in 40 digits, not by the code under test."""
import mpmath
import numpy as np
import pytest

from adcheck import refengine as rf
from adcheck import gradcheck
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.problem import Problem
from adcheck.gradcheck.numerics.precise import AD_ULPS, SAFETY
from adcheck.gradcheck.numerics.richardson_jacobian import richardson_blocks

SEEDS = range(4)
EPS = float(np.finfo(np.float64).eps)


def _artanh(r):
    return 0.5 * (rf.log(1 + r) - rf.log(1 - r))   # (as geoopt writes it: no log1p)


def _norm(y):
    return rf.sqrt((y * y).sum(-1, keepdim=True))


def _elementwise(x):
    return _artanh(x)


def _rows(y):
    return y * _artanh(_norm(y))


def _logmap0(y):   # geoopt's logmap0 at curvature -1
    r = _norm(y)
    return y * _artanh(r) / r


def _rows_held(y):
    """``_rows`` with ``r`` held in AD: the ``y y^T`` term is missing."""
    return y * _artanh(_norm(y).detach())


def _elementwise_off(x):
    """``_elementwise`` whose derivative is off by 1e-6 (of 1)."""
    return _artanh(x) + 1e-6 * (x - x.detach())


def _point(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((3, 4)) * 1e-8


def _exact(name: str, y: np.ndarray) -> np.ndarray:
    """The Jacobian of ``_elementwise``, ``_rows`` or ``_logmap0`` at ``y``, in 40 digits."""
    jac = np.zeros((y.size, y.size))
    with mpmath.workdps(40):
        for i, row in enumerate(y):
            v = [mpmath.mpf(float(t)) for t in row]
            r = mpmath.sqrt(sum(t * t for t in v))
            g, slope = mpmath.atanh(r), 1 / (1 - r * r)   # artanh and its derivative
            if name == "logmap0":   # y g(r) / r
                g, slope = g / r, (r * slope - g) / (r * r)
            for a in range(4):
                for b in range(4):
                    if name == "elementwise":
                        entry = 1 / (1 - v[a] ** 2) if a == b else 0
                    else:
                        entry = (g if a == b else 0) + v[a] * v[b] * slope / r
                    jac[4 * i + a, 4 * i + b] = float(entry)
    return jac


FUNCTIONS = {"elementwise": _elementwise, "rows": _rows, "logmap0": _logmap0}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_the_numerical_jacobian_is_within_its_estimate_of_mpmath(name, seed):
    y = _point(seed)
    problem = Problem(FUNCTIONS[name], (rf.tensor(y, requires_grad=True),))
    jac = richardson_blocks(Evaluator(problem))
    found, estimate = jac.blocks[0, 0], jac.errors[0, 0]
    exact = _exact(name, y)
    off = np.abs(found - exact)
    # within the precise tolerance a right AD value gets (the documented formula);
    # before: 0.51 where logmap0's slope is 1, 1 - 1e-4 elementwise, estimates of 1e-7
    allowed = SAFETY * estimate + np.sqrt(EPS) / 2 * np.abs(exact) + AD_ULPS * EPS * np.abs(
        exact).max()
    assert np.all(off <= allowed), (
        f"worst {off.max():.2e} against estimate {estimate.flat[np.argmax(off)]:.2e}")
    # and sharp enough to judge a formula: the rounding over the steps kept is small
    assert np.all(SAFETY * estimate <= 1e-5 * np.abs(exact).max())


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", ["elementwise", "rows"])
def test_the_precise_check_of_a_right_formula_passes(name, seed):
    # (logmap0's AD is off by up to 1e-9 of its largest entry in entries that
    # are 1e-16: its own rounding, which the precise tolerance does not allow;
    # the numerical side is right, as above)
    # (not explored: at y = 0 the norm's derivative is NaN, which is so)
    report = gradcheck.check(FUNCTIONS[name], (rf.tensor(_point(seed), requires_grad=True),),
                             precise=True, seed=0, explore=False)
    assert report.passed, report.message()


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("wrong", [_rows_held, _elementwise_off])
def test_a_wrong_formula_at_the_same_points_fails(wrong, seed):
    report = gradcheck.check(wrong, (rf.tensor(_point(seed), requires_grad=True),),
                             precise=True, seed=0, explore=False)
    assert not report.passed
