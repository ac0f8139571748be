"""Explaining a failure found in cells: which entry, and the dense window around it.

A compressed or probed comparison fails in a cell ``(i, g)`` of ``J S``. The
report must still say which entry is wrong and show the Jacobians around it
(what the terminal and HTML heatmaps draw) without building the whole
block. ``find_column`` bisects the cell: the seed column's coordinates are
split in halves, and the half whose partial directional derivative
(numerical against analytical, restricted to it) differs more is kept, one
directional difference per halving, until one coordinate is left.
``explain`` then builds the dense ``WINDOW`` x ``WINDOW`` window around that
entry with the dense producers' own columns (finite differences of those
columns, and the vjps of those rows or the jvps of those columns), compares
it, diagnoses it, and rewrites the ``Result``: ``where`` names the entry in
the whole block, ``expected``/``actual`` hold the window, ``origin`` its
first row and column.
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.core import coords
from adcheck.gradcheck.core.analytical import ad_parts
from adcheck.gradcheck.large.cells import forward_cells, numerical_cells
from adcheck.gradcheck.verdict.compare import compare
from adcheck.gradcheck.verdict.diagnosis import diagnose
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.large.lowprobed import entry_allowance
from adcheck.gradcheck.large.seeds import Identity, Probes
from adcheck.gradcheck.lowprec.lowprecision import formula_epsilon
from adcheck.gradcheck.core.sides import REVERSE

#: rows and columns of a window (the HTML report draws at most 32 x 32)
WINDOW = 32


def _partial(ev, mode, out_idx, in_idx, row, direction, scheme, analytic_row, fd=None):
    """Numerical minus analytical derivative of output coordinate ``row``
    along ``direction`` (real, on input ``in_idx``); ``fd`` differences (``ev``
    by default)."""
    seeds = Probes(direction[None])
    numerical = numerical_cells(fd or ev, in_idx, seeds, 0, 1, scheme)[out_idx][0][row, 0]
    if analytic_row is not None:
        analytical = float(analytic_row @ direction)
    else:
        analytical = forward_cells(ev, in_idx, seeds, 0, 1)[out_idx][row, 0]
    return numerical - analytical


def find_column(ev: Evaluator, mode: str, out_idx: int, in_idx: int, row: int, seeds, g: int,
                scheme, hint: int = -1, fd: Evaluator | None = None) -> int:
    """The input coordinate of cell ``(row, g)`` whose error dominates it;
    ``hint``, the cell's pattern entry, is tried first (one directional
    difference instead of a bisection when it holds most of the error);
    ``fd``: the evaluator differenced (``ev`` by default)."""
    candidates = seeds.members(g) if hasattr(seeds, "members") else np.arange(seeds.size)
    if candidates.size == 1:
        return int(candidates[0])
    weights = seeds.weight(candidates, g)
    analytic_row = None
    if mode == "reverse":  # one vjp gives the whole row: partial sums are free
        analytic_row = ad_parts(ev, REVERSE, out_idx, row, row + 1)[in_idx][0]

    def residual(members, w):
        direction = np.zeros(seeds.size)
        direction[members] = w
        return _partial(ev, mode, out_idx, in_idx, row, direction, scheme, analytic_row, fd)

    total = residual(candidates, weights)
    if hint >= 0 and abs(residual(np.array([hint]), seeds.weight([hint], g))) >= abs(total) / 2:
        return hint
    while candidates.size > 1:
        half = candidates.size // 2
        first = residual(candidates[:half], weights[:half])
        second = total - first
        if abs(first) >= abs(second):
            candidates, weights, total = candidates[:half], weights[:half], first
        else:
            candidates, weights, total = candidates[half:], weights[half:], second
    return int(candidates[0])


def find_row(ev: Evaluator, out_idx: int, in_idx: int, w: np.ndarray, cells: np.ndarray,
             direction: np.ndarray) -> int:
    """The output coordinate whose error dominates ``w^T (A - J) u``: the
    numerical side is ``cells`` (``J u``, held), the analytical side one vjp of
    ``w`` restricted to the half kept, per halving."""
    p = ev.problem

    def residual(rows):
        vector = np.zeros(len(w))
        vector[rows] = w[rows]
        found = REVERSE.products(ev, out_idx, REVERSE.vectors(p, out_idx, vector[None]),
                                 "locating a wrong entry")
        row = REVERSE.real_rows(p, in_idx, found[in_idx], 1)[0]
        return float(vector @ cells) - float(row @ direction)

    candidates = np.flatnonzero(w)
    total = residual(candidates)
    while candidates.size > 1:
        half = candidates.size // 2
        first = residual(candidates[:half])
        second = total - first
        if abs(first) >= abs(second):
            candidates, total = candidates[:half], first
        else:
            candidates, total = candidates[half:], second
    return int(candidates[0])


def _span(centre: int, size: int, width: int, unit: int = 1) -> tuple:
    start = max(0, min(centre - width // 2, size - width))
    start -= start % unit
    return start, min(size, start + width)


def _spans(row: int, col: int, rows: int, cols: int, unit: int) -> tuple:
    """Row and (real) column spans of the window; on a square block, near its
    diagonal, the same elements both ways (so that the diagonal, a transpose
    and cross terms can be recognised in it)."""
    element = col // unit
    if rows == cols // unit and abs(row - element) < WINDOW // 2:
        r0, r1 = _span((row + element) // 2, rows, WINDOW)
        return (r0, r1), (r0 * unit, r1 * unit)
    return _span(row, rows, WINDOW), _span(col, cols, WINDOW * unit, unit)


def dense_window(ev: Evaluator, mode: str, out_idx: int, in_idx: int, row: int, col: int,
                 scheme, fd: Evaluator | None = None) -> dict:
    """Rows and real columns around ``(row, col)`` of the numerical and the
    ``mode`` Jacobian block, built densely: ``expected``, ``errors`` (or
    ``None``) and ``actual`` (real), and their first ``row``/``column``;
    ``fd``: the evaluator differenced (``ev`` by default)."""
    p = ev.problem
    unit = 2 if p.layout.in_complex[in_idx] else 1
    (r0, r1), (c0, c1) = _spans(row, col, p.layout.out_size(out_idx),
                                p.layout.in_size(in_idx), unit)
    identity = Identity(p.layout.in_size(in_idx))
    expected, errors, _ = numerical_cells(fd or ev, in_idx, identity, c0, c1, scheme)[out_idx]
    if mode == "reverse":
        actual = ad_parts(ev, REVERSE, out_idx, r0, r1)[in_idx][:, c0:c1]
    else:
        actual = forward_cells(ev, in_idx, identity, c0, c1)[out_idx][r0:r1]
    return {"expected": expected[r0:r1], "errors": None if errors is None else errors[r0:r1],
            "actual": actual, "row": r0, "column": c0 // unit, "unit": unit}


def explain(ev: Evaluator, result, jac, scheme, epsilon: float, numerical=None,
            wide=None) -> None:
    """Rewrite a failing cell ``Result`` of ``jac`` (compressed or probed) to
    name its entry and hold the window around it (see the module docstring).
    ``scheme``: the check's (``numerics.scheme``); ``numerical``: the expected
    Jacobian, whose cells locate the row of a cell with projected rows
    (``jac.row_seeds``); ``wide``: a narrower formula's float64 run, which the
    expected side was differenced on (``gradcheck.large.lowprobed``): moving
    the narrow inputs themselves would round every step to their dtype, and
    the rounded point reads as an input the function changed in place."""
    p = ev.problem
    fd = Evaluator(wide) if wide is not None else ev
    seeds = jac.seeds[result.in_idx]
    row, g = result.where
    if jac.row_seeds:
        w = jac.row_seeds[result.out_idx][row]
        cells = numerical[result.out_idx, result.in_idx][:, g]
        row = find_row(ev, result.out_idx, result.in_idx, w, cells, seeds.directions(g, g + 1)[0])
    hint = int(seeds.locate(result.out_idx, np.array([row]), g)[0])
    col = find_column(ev, result.mode, result.out_idx, result.in_idx, row, seeds, g,
                      scheme, hint, fd)
    win = dense_window(ev, result.mode, result.out_idx, result.in_idx, row, col, scheme, fd)
    in_complex = p.layout.in_complex[result.in_idx]
    e = coords.complex_columns(win["expected"], in_complex)
    a = coords.complex_columns(win["actual"], in_complex)
    err = win["errors"]
    if err is not None and in_complex:
        err = np.hypot(err[:, 0::2], err[:, 1::2])
    tol = _window_tolerance(ev, fd, wide, win, e, err, scheme, epsilon, result)
    found = compare(result.check, result.mode, result.against, result.out_idx, result.in_idx,
                    e, a, tol)
    space = "W^T J S" if jac.row_seeds else "J S"
    cell = (f"found in cell [{result.where[0]}, {g}] of {space} ({seeds.kind}: {seeds.count} "
            f"seed columns; cell error {result.max_error:.1e}, tolerance {result.tolerance:.1e})")
    result.expected, result.actual = e, a
    result.origin = (win["row"], win["column"])
    if found.passed:
        result.where = (row, col // win["unit"])
        result.detail = (f"{cell}; the entries around [{row}, {col // win['unit']}] agree "
                         "one by one: the error is spread over entries each within the "
                         "tolerance")
        return
    r, c = found.where
    result.where = (r + win["row"], c + win["column"])
    result.max_error, result.tolerance = found.max_error, found.tolerance
    result.diagnosis = _diagnosis(win, e, a, tol, result, p)
    result.detail = f"{cell}; the entry located by bisection, shown in a dense window"


def _window_tolerance(ev, fd, wide, win, e, err, scheme, epsilon, result):
    """Each window entry's tolerance: the scheme's at the formula's precision; for
    a narrower formula (``wide``, its float64 run), the differences' own at
    float64 plus the allowance of terms 1 to 4 for the formula's rounding
    (``lowprobed.entry_allowance``). The scheme's at a narrow epsilon is no
    judge: its floor of 4096 units of bfloat16 is 32 times the block's largest
    entry, and every entry passed it."""
    if wide is None:
        return scheme.entry_tolerance(e, err, epsilon)
    tol = scheme.entry_tolerance(e, err, formula_epsilon(fd.problem))
    _, entries = entry_allowance(ev, wide)
    block = entries.get((result.out_idx, result.in_idx))
    if block is None:
        return tol
    rows = slice(win["row"], win["row"] + e.shape[0])
    unit = win["unit"]
    part = block[rows, win["column"] * unit:win["column"] * unit + e.shape[1] * unit]
    if unit == 2:   # (a complex input's pair of columns, as the errors are combined)
        part = np.hypot(part[:, 0::2], part[:, 1::2])
    return tol + part


def _diagnosis(win: dict, e, a, tol, result, problem) -> str | None:
    """What the window shows; failing a pattern, an entry one side has and
    the other lacks is named as such (a window cannot say that the whole
    block is zero)."""
    found = diagnose(win["expected"], win["actual"], tol, result.mode,
                     problem.layout.out_complex[result.out_idx],
                     problem.layout.in_complex[result.in_idx], origin=result.origin,
                     whole=False)
    if found:
        return found
    r, c = result.where[0] - win["row"], result.where[1] - win["column"]
    verb = "jvp" if result.mode == "forward" else "vjp"
    where = f"[{result.where[0]}, {result.where[1]}]"
    if abs(e[r, c]) <= tol[r, c]:
        return (f"the {verb} has an entry at {where} where the true Jacobian has none: the "
                "formula adds a term to the wrong element (an index, a broadcast or a "
                "reduction over the wrong dimension)")
    if abs(a[r, c]) <= tol[r, c]:
        return (f"the {verb} lacks the entry at {where} that the true Jacobian has: a missing "
                "term (such as a cross term between elements)")
    return None
