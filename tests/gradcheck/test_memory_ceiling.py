"""The memory ceiling a check states (``gradcheck.core.budget``), from both sides.

The arrays of a check get the budget less four evaluations (``for_arrays``),
never less than a quarter of it; so the most it holds is the budget, or, when
the evaluations alone take more than three quarters of it, four evaluations
plus a quarter of the budget. The peaks are measured with ``tracemalloc``
(NumPy's arrays included) on a function whose evaluation holds 8 or 16 MiB of
temporaries that no count of its inputs and outputs shows; the reserve of
four is needed (the peak is above three evaluations) and enough.
"""
from __future__ import annotations

import sys
import tracemalloc

import numpy as np
import pytest

import adcheck.refengine as E
from adcheck.gradcheck import check
from adcheck.gradcheck.core import budget as budgets
from adcheck.gradcheck.core import heap
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.problem import Problem

MIB = 2**20


def _stated_ceiling(budget: int, evaluation: int) -> int:
    # written from the documentation, apart from budget.ceiling
    return max(budget, 4 * evaluation + budget // 4)


@pytest.mark.parametrize("budget, evaluation, arrays", [
    (48 * MIB, 0, 48 * MIB), (48 * MIB, 4 * MIB, 32 * MIB), (48 * MIB, 9 * MIB, 12 * MIB),
    (48 * MIB, 16 * MIB, 12 * MIB)])
def test_the_arrays_get_the_budget_less_four_evaluations_and_at_least_a_quarter(
        budget, evaluation, arrays):
    assert budgets.for_arrays(budget, evaluation) == arrays
    assert budgets.ceiling(budget, evaluation) == _stated_ceiling(budget, evaluation)


measurable = pytest.mark.skipif(
    not sys.platform.startswith("linux") or heap._libc() is None
    or heap._reset_peak() is None,
    reason="an evaluation's allocations are measured through /proc/self/clear_refs "
           "(glibc on Linux 4.0 or later); here evaluation_bytes is 0")


def _heavy(temporaries: int):
    """``sum_k sin(w_k x)``: one evaluation holds ``temporaries`` copies of ``x``."""
    w = E.tensor(np.linspace(0.5, 1.5, temporaries), dtype=E.float64)
    return lambda x: (x.unsqueeze(-1) * w).sin().sum(-1)


def _input():
    return E.tensor(np.random.default_rng(0).uniform(-1, 1, 4096), dtype=E.float64,
                    requires_grad=True)


@measurable
def test_the_evaluator_keeps_what_evaluations_take_out_of_the_arrays_budget():
    problem = Problem(_heavy(128), (_input(),), "heavy")
    evaluation = problem.evaluation_bytes
    assert 7.5 * MIB < evaluation < 10 * MIB    # 4,096 x 128 doubles, twice, and the graph
    assert Evaluator(problem, 64 * MIB).budget == 64 * MIB - 4 * evaluation


@measurable
@pytest.mark.parametrize("temporaries, budget_mib", [(128, 24), (128, 64), (256, 48)])
def test_the_peak_stays_under_the_stated_ceiling(temporaries, budget_mib):
    budget = budget_mib * MIB
    evaluation = Problem(_heavy(temporaries), (_input(),), "heavy").evaluation_bytes
    tracemalloc.start()
    try:
        report = check(_heavy(temporaries), (_input(),), precise=True, check_forward_ad=True,
                       jacobian="probed", probes=4, memory_budget=budget, seed=0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert report.passed, report.message()
    ceiling = _stated_ceiling(budget, evaluation)
    assert peak <= ceiling, f"peak {peak / MIB:.1f} MiB, ceiling {ceiling / MIB:.1f} MiB"
    assert peak > 3 * evaluation, "three evaluations in flight would have been enough"
