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
from gradcheck.errors import GradcheckError
from gradcheck.jacobian import Jacobian
from gradcheck.numerical import perturbed
from gradcheck.problem import Problem

LEVELS = 14         # number of step sizes at most
FIRST_LEVELS = 8    # steps tried before deciding whether smaller ones are needed
CONVERGED = 1e-3    # "converged": error below this fraction of the relative allowance
ORDERS = 3          # extrapolation columns beyond the plain difference
NOISE_ULPS = 16     # assumed rounding error of a function value, in ulps


def _differences(problem, in_idx, c, steps, out_idx_list):
    """Central differences and their rounding noise at each step."""
    eps = max(coords.rounding_unit(problem.out_arrays[o].dtype) for o in out_idx_list)
    diffs, noises = [], []
    for h in steps:
        try:
            plus = perturbed(problem, in_idx, c, h)
            minus = perturbed(problem, in_idx, c, -h)
        except GradcheckError:
            plus = minus = {o: np.full(problem.layout.out_size(o), np.nan) for o in out_idx_list}
        diffs.append({o: (plus[o] - minus[o]) / (2 * h) for o in out_idx_list})
        noises.append({o: NOISE_ULPS * eps * (np.abs(plus[o]) + np.abs(minus[o])) / (2 * h)
                       for o in out_idx_list})
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


def _column(problem: Problem, in_idx: int, c: int, h0: float) -> dict:
    """(value, error) per output for one input coordinate.

    The first ``FIRST_LEVELS`` steps are tried; if every estimate is already
    ``CONVERGED`` times below the precise tolerance's relative allowance, the
    smaller steps are skipped, else all ``LEVELS`` are used.
    """
    outs = problem.float_out
    steps = [h0 * 2.0 ** -k for k in range(LEVELS)]
    diffs, noises = _differences(problem, in_idx, c, steps[:FIRST_LEVELS], outs)
    result = {o: extrapolate([d[o] for d in diffs], [n[o] for n in noises]) for o in outs}
    eps = max(coords.rounding_unit(problem.out_arrays[o].dtype) for o in outs)
    target = CONVERGED * np.sqrt(eps) / 2
    scale = max(float(np.max(np.abs(best), initial=0.0)) for best, _ in result.values())
    if all(np.all(err <= target * (np.abs(best) + scale)) for best, err in result.values()):
        return result
    more, more_noise = _differences(problem, in_idx, c, steps[FIRST_LEVELS:], outs)
    diffs, noises = diffs + more, noises + more_noise
    return {o: extrapolate([d[o] for d in diffs], [n[o] for n in noises]) for o in outs}


def richardson_blocks(problem: Problem) -> Jacobian:
    """The numerical Jacobian by extrapolation, with ``errors`` filled."""
    start, before = time.perf_counter(), problem.counts["function"]
    jac = Jacobian("numerical", problem.layout, errors={})
    outs = problem.float_out
    for in_idx in problem.diff_in:
        x = coords.to_real(problem.arrays[in_idx])
        values = {o: np.zeros((problem.layout.out_size(o), x.size)) for o in outs}
        errors = {o: np.zeros((problem.layout.out_size(o), x.size)) for o in outs}
        for c in range(x.size):
            column = _column(problem, in_idx, c, max(abs(x[c]), 2.0 ** -6) / 32.0)
            for o, (best, err) in column.items():
                values[o][:, c], errors[o][:, c] = best, err
        for o in outs:
            jac.blocks[o, in_idx], jac.errors[o, in_idx] = values[o], errors[o]
    jac.counts = {"function": problem.counts["function"] - before}
    jac.seconds = time.perf_counter() - start
    return jac
