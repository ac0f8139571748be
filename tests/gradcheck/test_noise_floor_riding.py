"""The noise floor (``gradcheck.numerics.noisefloor``) measured in the first
evaluation of the finite differences, and its cap found without a quantile
where the cap changes nothing: both give what the floor measured on its own
gives (its own evaluations, numpy's quantile)."""
import numpy as np
import pytest

from adcheck import refengine as rf
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.problem import Problem
from adcheck.gradcheck.numerics import noisefloor
from adcheck.gradcheck.numerics.noisefloor import TYPICAL, _below_cap, noise_floor
from adcheck.gradcheck.numerics.richardson_jacobian import richardson_blocks


def _problem():
    # a solve rounds normwise: its small entries carry an ulp of its largest one,
    # so the measured floor is not zero (the comparison below is not of zeros)
    a = np.random.default_rng(4).uniform(-1, 1, (5, 5)) + 3 * np.eye(5)
    b = np.random.default_rng(5).uniform(-1, 1, (5, 2))
    a[0, 0], b[0, 0] = 1e4, 1e-3
    inputs = (rf.tensor(a, requires_grad=True), rf.tensor(b, requires_grad=True))
    return Problem(lambda x, y: rf.linalg.solve(x, y), inputs)


def test_the_floor_riding_the_differences_is_the_floor_measured_alone():
    riding = Evaluator(_problem())
    richardson_blocks(riding)
    floors = riding.memo["noise_floors"]
    alone = Evaluator(_problem())
    for in_idx in (0, 1):
        own = noise_floor(alone, in_idx)
        for o, floor in own.items():
            np.testing.assert_array_equal(floors[in_idx][o], floor)
    assert any(np.any(f > 0) for by_out in floors.values() for f in by_out.values())


def test_riding_makes_no_evaluation_of_its_own():
    riding = Evaluator(_problem())
    richardson_blocks(riding)
    measured = Evaluator(_problem())
    for in_idx in (0, 1):
        noise_floor(measured, in_idx)      # measured first, on its own
    richardson_blocks(measured)
    calls = riding.problem.batching["batched_calls"], measured.problem.batching["batched_calls"]
    points = riding.problem.counts["function"], measured.problem.counts["function"]
    assert points[0] == points[1]          # the same points evaluated
    assert calls[0] == calls[1] - 2        # one call fewer per input


@pytest.mark.parametrize("seed", range(4))
def test_the_cap_is_skipped_only_where_numpys_quantile_would_change_nothing(seed):
    rng = np.random.default_rng(seed)
    taken = 0
    for _ in range(3000):
        n = int(rng.integers(1, 40))
        finite = np.abs(rng.standard_normal(n)) * 10.0 ** rng.integers(-5, 5)
        if rng.random() < 0.3:   # ties around the quantile's position
            finite[rng.integers(0, n, n // 2 + 1)] = finite[0]
        unit = 10.0 ** rng.uniform(-14, -2)
        cap = unit * float(np.quantile(finite, TYPICAL))
        second = np.abs(rng.standard_normal(6)) * cap * 10 ** rng.uniform(-3, 0.3)
        if rng.random() < 0.05:
            second[:] = cap          # exactly at the cap
        if _below_cap(second, finite, unit):
            taken += 1
            np.testing.assert_array_equal(np.minimum(second, cap), second)
    assert taken > 1000              # (the shortcut is taken for most of them)


@pytest.mark.parametrize("at_once", [1, 3])
def test_the_floor_measured_a_few_pairs_at_a_time_is_the_floor_riding(at_once, monkeypatch):
    # 1 - tanh(x)^2 rounds in stairs only the wide moves cross (their slopes
    # are compared across evaluations when the pairs are split)
    x = np.random.default_rng(0).uniform(-9.5, 9.5, 300)

    def slope(t):
        y = rf.tanh(t)
        return 1 - y * y
    riding = Evaluator(Problem(slope, (rf.tensor(x, requires_grad=True),)))
    richardson_blocks(riding)
    monkeypatch.setattr(noisefloor, "_pairs_at_once", lambda ev, in_idx: at_once)
    alone = Evaluator(Problem(slope, (rf.tensor(x, requires_grad=True),)))
    floor = noise_floor(alone, 0)[0]
    np.testing.assert_array_equal(riding.memo["noise_floors"][0][0], floor)
    assert np.count_nonzero(floor[np.abs(x) > 6]) == np.count_nonzero(np.abs(x) > 6)
