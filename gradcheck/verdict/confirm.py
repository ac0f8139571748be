"""A failed precise comparison judged again where smaller steps confirm the expected entries.

Only on failure (a check that passes costs nothing more): the columns of the
expected Jacobian (its coordinates, or a probed or compressed check's seed
columns) that hold a failed block's failing entries are differenced again at
every step (``numerics.confirmed``). Each entry of theirs whose confirmed
estimate has converged, by the standard that lets a column stop early
(``richardson.CONVERGED`` of the relative allowance), replaces the expected
one, and the block is compared again. A block that then passes says so, and
the expected Jacobian keeps those columns (the other AD side and the
sample's later checks compare with them too). One that still fails is left
as it was: smaller steps took nothing back.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from adcheck.gradcheck.core.coords import largest_finite
from adcheck.gradcheck.lowprec.lowprecision import is_narrow
from adcheck.gradcheck.numerics.confirmed import Confirmed
from adcheck.gradcheck.numerics.richardson import CONVERGED
from adcheck.gradcheck.verdict.compare import compare_pair

#: failing columns of one block differenced again at most (28 evaluations each,
#: batched): beyond, a failure spread that wide is no wide steps' bias
MOST_COLUMNS = 256


def confirm(ev, plan, numerical, side, actual, results: list, epsilon: float) -> tuple:
    """``(results, changed)``: ``results`` (``actual``, ``side``'s Jacobian,
    against ``numerical`` as ``plan`` compares them) with each failed block
    that passes on confirmed columns replaced by its passing result;
    ``changed``: whether ``numerical`` took confirmed columns (its tolerances
    are then to be made again). The column of a block's worst entry goes
    first: a block whose worst entry still fails there is given up (a wrong
    formula costs one column's steps, not every failing column's)."""
    scheme = plan.scheme
    failed = [r for r in results if not r.passed and r.against == "numerical"
              and r.max_error is not None and np.isfinite(r.max_error)
              and r.where is not None and (r.out_idx, r.in_idx) in numerical.blocks]
    if not failed or not scheme.estimates_error or numerical.errors is None or \
            is_narrow(ev.problem) or plan.wide is not None:
        return results, False
    trial = replace(numerical, blocks=dict(numerical.blocks), errors=dict(numerical.errors))
    worst = _columns(numerical, failed, [{r.where[-1]} for r in failed])
    shifts = _confirm_all(ev, trial, worst)
    expected, tols = plan.against(side, trial, scheme.tolerances(trial, epsilon))
    failed = [r for r in failed if _entry_passes(expected, actual, tols, r)]
    if not failed:
        return results, False
    expected, tols = plan.against(side, numerical, scheme.tolerances(numerical, epsilon))
    columns = _columns(numerical, failed, [_failing(expected, actual, tols, r) for r in failed])
    more = _confirm_all(ev, trial, {i: np.setdiff1d(cols, worst.get(i, []))
                                    for i, cols in columns.items()})
    shifts = {i: max((s for s in (shifts.get(i), more.get(i)) if s is not None), default=None)
              for i in columns}
    expected, tols = plan.against(side, trial, scheme.tolerances(trial, epsilon))
    again = {}
    for r in failed:
        key = (r.out_idx, r.in_idx)
        if r.in_idx not in columns:   # (its failing columns beyond MOST_COLUMNS)
            continue
        found = compare_pair(r.check, expected, actual, *key, 0.0, 0.0, tols[key])
        if found.passed:
            found.detail = _detail(len(columns[r.in_idx]), shifts[r.in_idx], side.mode)
            again[key] = found
    for key in again:   # (only a block that passes keeps its confirmed columns)
        numerical.blocks[key], numerical.errors[key] = trial.blocks[key], trial.errors[key]
    return [again.get((r.out_idx, r.in_idx), r) for r in results], bool(again)


def _entry_passes(expected, actual, tols: dict, r) -> bool:
    """Whether ``r``'s worst entry is within its tolerance now."""
    key = (r.out_idx, r.in_idx)
    e, a = expected.complex_form(*key)[r.where], actual.complex_form(*key)[r.where]
    return bool(np.abs(a - e) <= tols[key][r.where])


def _failing(expected, actual, tols: dict, r) -> set:
    """The columns (complex form) of ``r``'s block that hold a failing entry."""
    key = (r.out_idx, r.in_idx)
    e, a = expected.complex_form(*key), actual.complex_form(*key)
    with np.errstate(invalid="ignore"):
        return set(np.flatnonzero(np.any(~(np.abs(a - e) <= tols[key]), axis=0)).tolist())


def _confirm_all(ev, trial, columns: dict) -> dict:
    """``_confirm_columns`` of each input's ``columns`` (an input left with none
    is passed over); by input, the largest move."""
    return {i: _confirm_columns(ev, trial, i, cols) for i, cols in columns.items() if len(cols)}


def _columns(numerical, failed: list, picked: list) -> dict:
    """By input, the real columns of ``numerical`` (coordinates, or seed
    columns) of the complex-form columns ``picked`` of each failed result."""
    found = {}
    for r, cols in zip(failed, picked):
        cols = np.array(sorted(cols), dtype=np.int64)
        if numerical.layout.in_complex[r.in_idx] and not numerical.compressed(r.in_idx):
            cols = np.stack([2 * cols, 2 * cols + 1], axis=1).ravel()   # (d/dx, d/dy columns)
        found.setdefault(r.in_idx, set()).update(cols.tolist())
    return {i: np.array(sorted(cols), dtype=np.int64) for i, cols in found.items()
            if 0 < len(cols) <= MOST_COLUMNS}


def _confirm_columns(ev, trial, in_idx: int, columns: np.ndarray) -> float | None:
    """Put into ``trial`` (its blocks of ``in_idx`` copied first) the confirmed
    entries of ``columns`` that converged; the largest move of an expected
    entry, or ``None`` where none converged."""
    seeds = (trial.seeds or {}).get(in_idx)
    directions = None if seeds is None else np.concatenate(
        [seeds.directions(g, g + 1) for g in columns])
    if directions is not None and not directions.size:
        directions = None   # (unit columns: Identity seeds)
    found = Confirmed().cells(ev, in_idx, directions, columns)
    eps = max(ev.problem.epsilon(out_idx=o) for o in found)
    # (a column's scale is its largest entry over every output, as richardson's stop takes it)
    scale = np.max([largest_finite(best, axis=1) for best, _, _ in found.values()], axis=0)
    shift = None
    for o, (best, err, _) in found.items():
        with np.errstate(invalid="ignore"):
            good = err <= CONVERGED * np.sqrt(eps) / 2 * (np.abs(best) + scale[:, None])
        if not good.any():
            continue
        block = trial.blocks[o, in_idx] = trial.blocks[o, in_idx].copy()
        errors = trial.errors[o, in_idx] = trial.errors[o, in_idx].copy()
        rows, cols = np.nonzero(good.T)
        moved = np.abs(block[rows, columns[cols]] - best.T[rows, cols])
        block[rows, columns[cols]] = best.T[rows, cols]
        errors[rows, columns[cols]] = err.T[rows, cols]
        shift = max(shift or 0.0, float(moved.max(initial=0.0)))
    return shift


def _detail(count: int, shift: float | None, mode: str) -> str:
    shift = shift or 0.0
    return (f"finite differences confirmed at smaller steps: {count} column"
            f"{'s' if count > 1 else ''} of the expected Jacobian differenced again at every "
            f"step moved by up to {shift:.1e} and agree with the {mode}-mode values (the "
            "first steps reached kinks of the function's second derivative, an ELU's or a "
            "spline's, and their extrapolations agreed on a value that is not the derivative)")
