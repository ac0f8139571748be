"""Richardson-extrapolated central differences with per-entry error estimates.

For each input coordinate the central difference ``D(h)`` is taken at steps
``h_k = h_0 * 2**-k``, ``k < 8``, and ``k < 14`` unless every estimate
has converged by then (``h_0`` a 32nd of the coordinate's magnitude, at
least ``2**-11``) and extrapolated in a tableau,
``R[k][j] = (4**j R[k][j-1] - R[k-1][j-1]) / (4**j - 1)``, which cancels the
``h**2``, ``h**4``, ... terms of the error. Each extrapolated entry gets an
error estimate: its largest distance to its lower-order parent and to its
same-order neighbours at the next larger and smaller step, plus the
propagated rounding noise of the function values. Each output coordinate
keeps the entry with the smallest estimate. Steps that
leave the function's domain (NaN or an exception) are discarded.
"""
from __future__ import annotations

import time

import numpy as np

from gradcheck import coords
from gradcheck.evaluation import Evaluator
from gradcheck.jacobian import Jacobian
from gradcheck.numerical import perturbed_outputs
from gradcheck.problem import Problem

LEVELS = 14         # number of step sizes at most
FIRST_LEVELS = 8    # steps tried before deciding whether smaller ones are needed
CONVERGED = 1e-3    # "converged": error below this fraction of the relative allowance
ORDERS = 3          # extrapolation columns beyond the plain difference
NOISE_ULPS = 16     # assumed rounding error of a function value, in ulps


def _stacked_differences(ev: Evaluator, in_idx, steps, columns) -> tuple:
    """Central differences and their rounding noise at ``+-steps[k, j]`` on
    coordinate ``columns[j]``: per level ``k``, by output, a (columns, output
    size) matrix. A step where the function raises gives NaN (discarded)."""
    p = ev.problem
    outs = p.float_out
    both = perturbed_outputs(ev, in_idx, np.concatenate([steps, -steps]),
                             f"extrapolating finite differences for input {in_idx}", columns,
                             tolerant=True)
    levels = len(steps)
    eps = max(p.epsilon(out_idx=o) for o in outs)
    diffs, noises = [], []
    for k in range(levels):
        h = steps[k][:, None]
        plus = {o: both[o][k] for o in outs}
        minus = {o: both[o][levels + k] for o in outs}
        diffs.append({o: (plus[o] - minus[o]) / (2 * h) for o in outs})
        noises.append({o: NOISE_ULPS * eps * (np.abs(plus[o]) + np.abs(minus[o])) / (2 * h)
                       for o in outs})
    return diffs, noises


def _tableau(diffs: list, noises: list) -> tuple:
    """Rows of extrapolated values and their propagated rounding noise."""
    values, noise = [[diffs[0]]], [[noises[0]]]
    for k in range(1, len(diffs)):
        row, row_noise = [diffs[k]], [noises[k]]
        for j in range(1, min(k, ORDERS) + 1):
            w = 4.0 ** j
            row.append((w * row[j - 1] - values[k - 1][j - 1]) / (w - 1))
            row_noise.append((w * row_noise[j - 1] + noise[k - 1][j - 1]) / (w - 1))
        values.append(row)
        noise.append(row_noise)
    return values, noise


def extrapolate(diffs: list, noises: list) -> tuple:
    """Best tableau entry per coordinate and its error estimate.

    An entry's truncation estimate is its largest distance to its parent of
    lower order and to its neighbours of the same order at the next larger
    and the next smaller step, so a value that only agrees with itself
    across a kink or a singularity is not chosen.
    """
    values, noise = _tableau(diffs, noises)
    best = np.full_like(diffs[0], np.nan)
    best_err = np.full_like(diffs[0], np.inf)
    for k in range(1, len(values)):
        for j in range(1, len(values[k])):
            value = values[k][j]
            trunc = np.abs(value - values[k][j - 1])
            for other in (k - 1, k + 1):
                if 0 <= other < len(values) and j < len(values[other]):
                    trunc = np.maximum(trunc, np.abs(value - values[other][j]))
            err = trunc + noise[k][j]
            err = np.where(np.isfinite(err), err, np.inf)
            better = err < best_err
            best = np.where(better, value, best)
            best_err = np.where(better, err, best_err)
    return best, best_err


def _converged(problem: Problem, result: dict) -> np.ndarray:
    """Per coordinate (row), whether every estimate is ``CONVERGED`` times
    below the precise tolerance's relative allowance (then the smaller steps
    are skipped)."""
    eps = max(problem.epsilon(out_idx=o) for o in problem.float_out)
    target = CONVERGED * np.sqrt(eps) / 2
    scale = np.max([np.max(np.abs(best), axis=1, initial=0.0) for best, _ in result.values()],
                   axis=0)
    return np.all([np.all(err <= target * (np.abs(best) + scale[:, None]), axis=1)
                   for best, err in result.values()], axis=0)


def _extrapolated(problem: Problem, diffs: list, noises: list) -> dict:
    return {o: extrapolate([d[o] for d in diffs], [n[o] for n in noises])
            for o in problem.float_out}


def _steps(x: np.ndarray) -> np.ndarray:
    """Steps ``h_k`` by level (rows) and coordinate (columns)."""
    h0 = np.maximum(np.abs(x), 2.0 ** -6) / 32.0
    return h0[None, :] * 2.0 ** -np.arange(LEVELS)[:, None]


def _columns(ev: Evaluator, in_idx: int, steps: np.ndarray) -> dict:
    """(value, error) per output, each (coordinates, output size), for every
    coordinate of input ``in_idx``.

    The first ``FIRST_LEVELS`` steps are tried; coordinates whose estimates
    have not converged get all ``LEVELS``. Each phase is one stacked
    evaluation (batched when the function batches). The extrapolation is
    elementwise, so doing all coordinates at once gives what doing one at a
    time gives.
    """
    problem = ev.problem
    n = steps.shape[1]
    if n == 0:
        return {o: (np.zeros((0, problem.layout.out_size(o))),) * 2 for o in problem.float_out}
    diffs, noises = _stacked_differences(ev, in_idx, steps[:FIRST_LEVELS], list(range(n)))
    result = _extrapolated(problem, diffs, noises)
    pending = np.flatnonzero(~_converged(problem, result))
    if pending.size:
        extra, extra_noise = _stacked_differences(ev, in_idx, steps[FIRST_LEVELS:][:, pending],
                                                  list(pending))
        diffs = [{o: d[o][pending] for o in d} for d in diffs] + extra
        noises = [{o: v[o][pending] for o in v} for v in noises] + extra_noise
        redone = _extrapolated(problem, diffs, noises)
        for o, (best, err) in redone.items():
            result[o][0][pending], result[o][1][pending] = best, err
    return result


def richardson_blocks(ev: Evaluator) -> Jacobian:
    """The numerical Jacobian by extrapolation, with ``errors`` filled."""
    problem = ev.problem
    start, before = time.perf_counter(), problem.counts["function"]
    jac = Jacobian("numerical", problem.layout, errors={})
    for in_idx in problem.diff_in:
        x = coords.to_real(problem.arrays[in_idx])
        for o, (best, err) in _columns(ev, in_idx, _steps(x)).items():
            jac.blocks[o, in_idx], jac.errors[o, in_idx] = best.T.copy(), err.T.copy()
    jac.counts = {"function": problem.counts["function"] - before}
    jac.seconds = time.perf_counter() - start
    return jac
