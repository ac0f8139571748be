"""The escape odds a probed check states, measured: errors of the stated size
planted in a Jacobian, one fresh seed and entry per trial, escape as often as
the report says they do (within the binomial interval), not more, not less.

``f(x) = 2 x`` on refengine, written as a Function whose vjp and jvp are both
wrong in one off-diagonal entry ``(i, j)`` by ``delta = r * rho``: ``r`` the
relative size the report states its odds for (``STATED_RELATIVE``), ``rho = 2``
every row's norm. With ``rtol = 0`` a forward cell escapes when
``|delta g_j| <= atol``, so ``atol = 0.5 delta`` makes escapes common enough to
count in a few dozen trials (one direction misses with probability
``erf(0.5 / sqrt 2) = 0.38``); the odds the report states for that tolerance
are what is checked, forward and reverse.
"""
from __future__ import annotations

import functools
import math

import numpy as np
import pytest

import adcheck.refengine as E
from adcheck.gradcheck import check
from adcheck.gradcheck.large.probed import STATED_RELATIVE

TRIALS = 80
N = 8
DELTA = STATED_RELATIVE * 2.0   # r times the row norm of J = 2 I


def _planted(i: int, j: int):
    return _planted_by(i, j, DELTA)


def _planted_by(i: int, j: int, delta: float):
    into_j, into_i = np.zeros(N), np.zeros(N)
    into_j[j], into_i[i] = delta, delta

    class Planted(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return 2 * x

        @staticmethod
        def backward(ctx, g):
            return 2 * g + E.from_numpy(into_j) * g[i]

        @staticmethod
        def jvp(ctx, t):
            return 2 * t + E.from_numpy(into_i) * t[j]
    return Planted.apply


@functools.lru_cache(maxsize=None)
def _trials(probes: int) -> dict:
    """Per mode: how many trials escaped, and the mean of the odds stated."""
    escaped = {"forward": 0, "reverse": 0}
    stated = {"forward": [], "reverse": []}
    for seed in range(TRIALS):
        rng = np.random.default_rng(seed)
        i, j = (int(v) for v in rng.choice(N, 2, replace=False))
        x = E.from_numpy(rng.standard_normal(N)).requires_grad_()
        report = check(_planted(i, j), (x,), precise=False, rtol=0.0, atol=DELTA / 2,
                       check_forward_ad=True, jacobian="probed", probes=probes, seed=seed,
                       check_scaling=False, check_adjoint=False)
        assert report.escape["relative_error"] == STATED_RELATIVE
        for res in report.results:
            if res.check in escaped:
                escaped[res.check] += res.passed
        for mode in stated:
            stated[mode].append(report.escape[mode])
    return {mode: (escaped[mode], float(np.mean(stated[mode]))) for mode in escaped}


def test_planted_errors_of_the_stated_size_escape_as_often_as_stated():
    for mode, (escaped, stated) in _trials(probes=1).items():
        # three binomial standard deviations of TRIALS draws at the stated odds
        sigma = math.sqrt(stated * (1 - stated) / TRIALS)
        measured = escaped / TRIALS
        assert abs(measured - stated) <= 3 * sigma + 1 / TRIALS, (mode, measured, stated)


def test_the_single_direction_odds_are_what_one_gaussian_gives():
    # forward, one direction: P(|g| <= atol / delta) = erf(0.5 / sqrt 2) = 0.383;
    # the stated odds estimate each row's norm from the cells themselves
    escaped, stated = _trials(probes=1)["forward"]
    assert stated == pytest.approx(math.erf(0.5 / math.sqrt(2)), abs=0.08)


def test_above_the_allowance_the_odds_are_stated_for_a_size_that_can_be_caught():
    # a tolerance whose relative part (rtol 1e-4) exceeds STATED_RELATIVE, as a float32
    # model's has: before, the report stated certainty of escape (1.0) for 1e-6; now
    # for the first power of ten at least 32 rtol (1e-2), and planted errors of that
    # size escape no more often than it states
    r, trials, escaped, stated = 1e-2, 40, {"forward": 0, "reverse": 0}, []
    for seed in range(trials):
        rng = np.random.default_rng(seed)
        i, j = (int(v) for v in rng.choice(N, 2, replace=False))
        planted = _planted_by(i, j, r * 2.0)
        x = E.from_numpy(rng.standard_normal(N)).requires_grad_()
        report = check(planted, (x,), precise=False, rtol=1e-4, atol=0.0,
                       check_forward_ad=True, jacobian="probed", probes=2, seed=seed,
                       check_scaling=False, check_adjoint=False)
        assert report.escape["relative_error"] == r
        stated.append(max(report.escape["forward"], report.escape["reverse"]))
        for res in report.results:
            if res.check in escaped:
                escaped[res.check] += res.passed
    bound = float(np.mean(stated))
    assert bound < 0.5
    for mode, count in escaped.items():
        sigma = math.sqrt(bound * (1 - bound) / trials)
        assert count / trials <= bound + 3 * sigma + 1 / trials, (mode, count, bound)
