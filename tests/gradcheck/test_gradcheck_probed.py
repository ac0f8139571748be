"""Probed Jacobians: every output along a few random directions, with stated escape odds.

The odds come from formulas (``gradcheck.large.probed``); they are checked here
against closed forms and Monte Carlo draws, and a probed check of a dense
block (cumsum) must pass when right, catch and locate a planted single-entry
error when wrong, and state its odds in the report.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from gradcheck_support import one_torch_thread  # noqa: F401  (a fixture)

from adcheck.gradcheck import check
from adcheck.gradcheck.large.probed import forward_escape, reverse_escape

pytestmark = pytest.mark.usefixtures("one_torch_thread")

N = 1500


@pytest.mark.parametrize("alpha", [0.01, 0.3, 2.0])
def test_forward_escape_is_the_ratio_of_two_gaussians(alpha):
    # P(|X| <= alpha |Y|) = (2 / pi) atan(alpha) for independent standard Gaussians
    exact = 2 / math.pi * math.atan(alpha)
    assert forward_escape(alpha, 0.0, 1) == pytest.approx(exact, rel=1e-3)
    assert forward_escape(alpha, 0.0, 3) == pytest.approx(exact ** 3, rel=3e-3)


@pytest.mark.parametrize("t, k", [(0.05, 1), (0.5, 1), (1.5, 2), (3.0, 3)])
def test_reverse_escape_matches_monte_carlo(t, k):
    rng = np.random.default_rng(11)
    draws = 400_000
    x = np.abs(rng.standard_normal((draws, k))).max(axis=1)
    y = np.abs(rng.standard_normal((draws, k))).max(axis=1)
    measured = float(np.mean(x * y <= t))
    sigma = math.sqrt(measured * (1 - measured) / draws)
    assert abs(reverse_escape(t, k, k) - measured) < 5 * sigma + 1e-4


def cumsum_function(E, bug: float = 0.0, row: int = 1100, col: int = 321):
    """cumsum whose vjp and jvp add ``bug`` to entry ``[row, col]``."""
    go = np.zeros(N)
    go[col] = bug

    class Cumsum(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return E.cumsum(x, 0)

        @staticmethod
        def backward(ctx, g):
            gx = E.flip(E.cumsum(E.flip(g, [0]), 0), [0])
            return gx + E.from_numpy(go) * g[row]

        @staticmethod
        def jvp(ctx, t):
            out = E.cumsum(t, 0)
            picked = np.zeros(N)
            picked[row] = 1.0
            return out + E.from_numpy(picked) * t[col] * bug
    return Cumsum.apply


def _x(E, size: int = N):
    return E.from_numpy(np.random.default_rng(3).standard_normal(size)).requires_grad_()


def test_a_correct_formula_passes_and_the_report_states_the_odds(E):
    report = check(cumsum_function(E), (_x(E),), precise=True, check_forward_ad=True,
                   jacobian="probed", probes=3, seed=0)
    assert report.passed, report.message()
    assert report.plan == "probed"
    assert report.jacobians["numerical"][0, 0].shape == (N, 3)
    assert 0 <= report.escape["forward"] < 1e-6
    assert 0 <= report.escape["reverse"] <= 1
    assert "escapes with probability at most forward mode" in report.message()


def test_a_single_wrong_entry_is_caught_and_located(E):
    # the entry is 1 among 1101 entries of its row: 3e-5 of the row's norm
    report = check(cumsum_function(E, bug=1e-3), (_x(E),), precise=True,
                   check_forward_ad=True, jacobian="probed", probes=3, seed=1)
    forward = [r for r in report.failures if r.check == "forward"]
    assert forward and forward[0].where == (1100, 321)
    assert forward[0].max_error == pytest.approx(1e-3, rel=1e-4)


def sin_function(E, bug: float = 0.0, row: int = 1100, size: int = N, backward_bug=0.0):
    """sin of ``size`` inputs whose jvp (and vjp: ``backward_bug``) is off by a
    relative ``bug`` at output ``row``."""
    scale, back = np.ones(size), np.ones(size)
    scale[row] += bug
    back[row] += backward_bug

    class Sin(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            ctx.save_for_forward(x)
            return E.sin(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * E.cos(x) * E.from_numpy(back)

        @staticmethod
        def jvp(ctx, t):
            (x,) = ctx.saved_tensors
            return t * E.cos(x) * E.from_numpy(scale)
    return Sin.apply


def test_output_windows_beyond_the_budget_still_catch_a_wrong_entry(E):
    # under a budget of 1 MiB the first phase's quotients of one direction of 10,000
    # outputs (72 bytes a coordinate) do not fit in a share of it: the extrapolation
    # takes the outputs a window at a time, evaluating the function again for each
    # (more evaluations), and the cells go a probe column at a time
    # (``gradcheck.large.probestream``); it must still pass a right formula and locate a
    # wrong entry
    size = 10_000
    options = dict(precise=True, check_forward_ad=True, jacobian="probed", probes=2, seed=0)
    whole = check(sin_function(E, size=size), (_x(E, size),), **options)
    windowed = check(sin_function(E, size=size), (_x(E, size),), memory_budget=2**20, **options)
    assert whole.passed and windowed.passed, windowed.message()
    assert windowed.counts["function"] > 1.5 * whole.counts["function"], \
        (windowed.counts, whole.counts)
    assert "chunks of probe columns" in windowed.coverage["forward"]
    wrong = check(sin_function(E, bug=1e-6, size=size), (_x(E, size),), memory_budget=2**20,
                  **options)
    forward = [r for r in wrong.failures if r.check == "forward"]
    assert forward and forward[0].where[0] == 1100


def test_a_wrong_vjp_entry_is_located_alike_with_the_cells_whole_or_a_column_at_a_time(E):
    # reverse mode compares W^T A U with W^T (J U): a column at a time, the
    # projection is summed from each column's cells, and the failing cell's column
    # differenced again to find its row
    size = 6_000   # 1.2 MB of cells, 12 copies of 6,000 by 2 directions
    x = _x(E, size)
    options = dict(precise=True, jacobian="probed", probes=2, seed=0)
    found, streamed = [], []
    for budget in (2**20, 512 * 2**20):
        report = check(sin_function(E, size=size, backward_bug=1e-3), (x,),
                       memory_budget=budget, **options)
        found.append([(r.check, r.where) for r in report.failures])
        streamed.append("chunks of probe columns" in report.coverage["numerical"])
    assert streamed == [True, False]
    assert found[0] == found[1] and ("reverse", (1100, 1100)) in found[0], found


def test_a_probed_check_of_many_outputs_keeps_to_a_small_memory_budget():
    # softmax's directions need most levels of the extrapolation; one direction's
    # perturbed outputs and quotients at every level of 65,536 outputs held at once
    # peaked near 70 MiB; now the peak of every array the check makes stays in 24 MiB
    import tracemalloc

    import adcheck.refengine as E
    x = E.tensor(np.random.default_rng(0).standard_normal((1024, 64)), dtype=E.float64,
                 requires_grad=True)
    tracemalloc.start()
    try:
        report = check(lambda t: E.nn.functional.softmax(t, -1), (x,), precise=True,
                       check_forward_ad=True, jacobian="probed", memory_budget=24 * 2**20,
                       seed=0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert report.passed and report.plan == "probed", report.message()
    assert peak < 24 * 2**20, f"peak {peak / 2**20:.1f} MiB"


def test_the_cells_of_many_outputs_and_few_probes_keep_to_the_budget():
    # an outer product of 1,024 and 256 inputs: 262,144 outputs, four directions
    # each, 8 MiB a block. Holding the cells whole (the numerical ones and their
    # error estimates, forward mode's, the tolerances, the comparisons' and the
    # escape odds' temporaries) took the arrays to 117 MiB under a budget of 64;
    # a probe column at a time (``gradcheck.large.probestream``), they stay in it
    import tracemalloc

    import adcheck.refengine as E
    rng = np.random.default_rng(0)
    x = E.tensor(rng.uniform(-1, 1, 1024), dtype=E.float64, requires_grad=True)
    y = E.tensor(rng.uniform(-1, 1, 256), dtype=E.float64, requires_grad=True)
    budget = 64 * 2**20
    tracemalloc.start()
    try:
        report = check(lambda a, b: a[:, None] * b[None, :], (x, y), precise=True,
                       check_forward_ad=True, jacobian="probed", probes=4,
                       memory_budget=budget, seed=0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < budget, f"peak {peak / 2**20:.1f} MiB"
    assert report.passed and report.plan == "probed", report.message()
    assert "chunks of probe columns" in report.coverage["forward"]
