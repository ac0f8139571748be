"""Rounding in stairs wider than the noise floor's moves of a few ulps, and
odd about the point, which second differences do not see: ``1 - tanh(x)^2``
at ``|x|`` of 5 to 9.5 and ``s (1 - s)`` for ``s = sigmoid(x)`` at 8 to 20
are computed from an intermediate within ``1e-4`` to ``1e-9`` of 1, so each
is a staircase of stairs an ulp of 1 high (up to ``3e8`` ulps of the result).
The samples span both signs, as op_db's do (``make_tensor``'s range).
Over Richardson's halving steps the rounding often aliases to a wrong slope
the same at every step; the wide moves of ``gradcheck.numerics.noisefloor``
measure it. Judged by mpmath in 40 digits, not by the code under test."""
import mpmath
import numpy as np
import pytest

from adcheck import refengine as rf
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.problem import Problem
from adcheck.gradcheck.numerics.precise import SAFETY
from adcheck.gradcheck.numerics.richardson_jacobian import richardson_blocks
from adcheck import gradcheck


def _tanh_slope(x):
    t = rf.tanh(x)
    return 1 - t * t


def _sigmoid_slope(x):
    s = rf.sigmoid(x)
    return s * (1 - s)


def _exact_tanh(x) -> float:
    t = mpmath.tanh(mpmath.mpf(x))
    return float(-2 * t * (1 - t * t))


def _exact_sigmoid(x) -> float:
    s = 1 / (1 + mpmath.exp(-mpmath.mpf(x)))
    return float(s * (1 - s) * (1 - 2 * s))


CASES = {"tanh": (_tanh_slope, _exact_tanh, 9.5),
         "sigmoid": (_sigmoid_slope, _exact_sigmoid, 20.0)}


def _points(name: str, seed: int) -> np.ndarray:
    reach = CASES[name][2]
    return np.random.default_rng(seed).uniform(-reach, reach, 200)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("name", sorted(CASES))
def test_every_numerical_entry_is_within_its_error_estimate_of_mpmath(name, seed):
    func, exact, _ = CASES[name]
    x = _points(name, seed)
    with mpmath.workdps(40):   # (not mpmath.mp.dps: the precision would outlive the test)
        truth = np.array([exact(float(e)) for e in x])
    jac = richardson_blocks(Evaluator(Problem(func, (rf.tensor(x, requires_grad=True),))))
    value, estimate = np.diag(jac.blocks[0, 0]), np.diag(jac.errors[0, 0])
    missed = np.abs(value - truth) > SAFETY * estimate
    assert not missed.any(), (
        f"{missed.sum()} of {x.size} entries off by more than {SAFETY} times their estimate; "
        f"worst at x = {x[np.argmax(np.abs(value - truth) / estimate)]}")


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_precise_check_of_a_right_derivative_passes(name):
    report = gradcheck.check(CASES[name][0], (rf.tensor(_points(name, 0), requires_grad=True),),
                             precise=True, jacobian="dense")
    assert report.passed, report.message()
