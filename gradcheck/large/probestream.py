"""Probed checks beyond the memory budget: the cells of ``J U`` a few columns at a time.

A probed check (``gradcheck.large.probed``) holds its cells whole: ``M x k`` per
(output, input) pair for the numerical side, its error estimates, the
tolerances, forward mode's cells, and the comparisons' and the escape
odds' temporaries beside them. With few probes and many outputs (a
convolution of a million inputs: 1.4 million outputs, 45 MB a block) that
is ten such arrays at once, far beyond the budget the probes keep to
everywhere else. When the cells do not fit (``Plan.streamed``), each
input's probe columns are taken a chunk at a time, as ``gradcheck.large.streamed``
takes a dense block's: the numerical cells of the chunk (``streamed``'s
``expected_span``, with the base of their tolerances), forward mode's jvps along
the same directions compared as they come (a ``compare.Tally`` per pair),
and what the rest of the check needs reduced from them before they are
dropped:

- reverse mode's side: ``W^T (J U)`` for the chunk's columns is ``W`` times
  the chunk's cells, and so are its tolerances (``probed.projected``'s, with
  the base in place of the error estimate: ``|W| base`` plus the rounding of
  the sum); reverse mode's ``W^T A U`` is ``k`` vjps made once, compared
  with the projections once every chunk has added its columns;
- the escape odds: each row's sum of squared cells and of its tolerances'
  absolute parts (``probed.row_statistics``), two numbers per row.

No evaluation is repeated: each direction is differenced once and each jvp
and vjp made once, as in the whole check. A failing cell is located and
shown as in the whole check (``window.explain``); for reverse mode the
failing column's cells are differenced again to find its row.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from adcheck.gradcheck.core import budget as budgets
from adcheck.gradcheck.verdict import checks
from adcheck.gradcheck.large.cells import numerical_cells
from adcheck.gradcheck.verdict.compare import compare_jacobians
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.verdict.faults import unresolved_result
from adcheck.gradcheck.core.jacobian import Jacobian
from adcheck.gradcheck.large.probed import (
    odds_of_rows,
    probed_reverse,
    projection_tolerance,
    row_statistics,
    row_summary,
)
from adcheck.gradcheck.core.sides import FORWARD, REVERSE
from adcheck.gradcheck.large.streamed import (
    ChunkState,
    expected_span,
    forward_span,
    tally_results,
)
from adcheck.gradcheck.large.window import explain
from adcheck.gradcheck.verdict.compare import set_magnitudes


#: rows of cells reduced at once (``_reduce``): their temporaries stay in cache
PIECE_ROWS = 2 ** 15


class _Probes(ChunkState):
    """``streamed``'s state with the probe plan's directions for seeds."""

    def __init__(self, ev, options, sides, epsilon, plan, scheme):
        # (a ``comp`` with seeds: cells, not input coordinates, are counted and
        # explained)
        super().__init__(ev, options, sides, epsilon, SimpleNamespace(seeds=plan.seeds),
                         scheme)
        self.plan = plan
        #: per pair: reverse mode's projected expectation ``W^T J U`` and its
        #: tolerance, filled a chunk of columns at a time
        self.projected, self.tolerances = {}, {}
        #: per pair: ``probed.row_statistics`` summed over the chunks
        self.rows = {}

    def seeds(self, in_idx: int):
        return self.plan.seeds[in_idx]


def streamed_probed(ev: Evaluator, report, options, sides: list, epsilon: float,
                    plan) -> None:
    """The slow check of a probed plan whose cells do not fit in the budget
    (see the module docstring)."""
    p = ev.problem
    probes = plan.probes
    state = _Probes(ev, options, sides, epsilon, probes, plan.scheme)
    reverse = probed_reverse(ev, probes) if REVERSE in sides else None
    if reverse is not None:   # reentrancy is a property of the backward (PyTorch's check)
        report.results += checks.reentrant(p, reverse, probed_reverse(ev, probes),
                                           options.nondet_tol)
    rows = sum(p.layout.out_size(o) for o in p.float_out)
    # (narrow chunks cost no evaluation: every direction is differenced once anyway)
    width = budgets.chunk_columns(ev.budget, rows, budgets.CELL_COPIES)
    for in_idx in p.diff_in:
        for a, b in budgets.chunks(probes.seeds[in_idx].count, width):
            state.chunks += 1
            expected = expected_span(state, in_idx, probes.seeds[in_idx], (a, b), False)
            if FORWARD in sides:
                forward_span(state, expected, in_idx, (a, b), False)
            _reduce(state, expected, in_idx, (a, b))
            del expected   # before the next chunk's are made
        for key, held in list(state.rows.items()):   # the input's rows, in a few numbers
            if key[1] == in_idx:
                state.rows[key] = row_summary(*held)
    for tol in state.tolerances.values():   # the absolute part, once per cell
        tol += plan.scheme.absolute + 1e-300
    set_magnitudes(report, state.tallies)
    tally_results(ev, report, state.tallies, options, plan.scheme, epsilon, state.comp)
    report.results += [unresolved_result(key, *found, True)
                       for key, found in sorted(state.unresolved.items())]
    if reverse is not None:
        report.results += _reverse_results(state, reverse)
        report.jacobians["reverse"] = reverse
    c = plan.scheme.relative(epsilon)
    report.escape = odds_of_rows(state.rows, state.tolerances or None, probes.k, c)
    what = (f"cells beyond the memory budget ({ev.budget} bytes): {state.chunks} chunks of "
            "probe columns, each built, compared and dropped")
    report.coverage = {"numerical": f"finite differences of J U for {probes.k} Gaussian "
                                    f"directions; {what}"}
    if FORWARD in sides:
        report.coverage["forward"] = f"forward mode A U, {probes.k} jvps; {what}"
    if reverse is not None:
        report.coverage["reverse"] = reverse.note


def _reduce(state: _Probes, expected: dict, in_idx: int, span: tuple) -> None:
    """What reverse mode and the escape odds need of the chunk's cells, a piece
    of rows at a time (``|W|`` and the other temporaries then stay small)."""
    probes = state.plan
    c = state.scheme.relative(state.epsilon)
    a, b = span
    for o, (e, base) in expected.items():
        key = (o, in_idx)
        squares, floors = np.zeros(len(e)), np.zeros(len(e))
        reverse = o in probes.rows
        if reverse:
            w = probes.rows[o]
            k = probes.seeds[in_idx].count
            projected = state.projected.setdefault(key, np.zeros((len(w), k)))
            tol = state.tolerances.setdefault(key, np.zeros((len(w), k)))
        for r0, r1 in budgets.chunks(len(e), PIECE_ROWS):
            cells, bases = e[r0:r1], base[r0:r1]
            squares[r0:r1], floors[r0:r1], _ = row_statistics(cells, bases, c)
            if reverse:
                _project(state, w[:, r0:r1], cells, bases, projected[:, a:b], tol[:, a:b])
        held = state.rows.get(key)
        if held is None:
            state.rows[key] = (squares, floors, b - a)
        else:   # (in place: a row's sums over every chunk, no copy of them)
            np.add(held[0], squares, out=held[0])
            np.add(held[1], floors, out=held[1])
            state.rows[key] = (held[0], held[1], held[2] + b - a)


def _project(state: _Probes, w: np.ndarray, cells: np.ndarray, base: np.ndarray,
             projected: np.ndarray, tol: np.ndarray) -> None:
    """Add rows ``w`` (a piece of ``W``'s columns) times the cells into the
    projection, and their part of its tolerance (``probed.projected``'s)."""
    projected += w @ cells
    # the projection adds the cells' absolute part once, at the end
    cell_tol = base - state.scheme.absolute if state.scheme.absolute else base
    tol += projection_tolerance(w, cells, cell_tol, state.epsilon)


def _reverse_results(state: _Probes, reverse: Jacobian) -> list:
    """``W^T A U`` against the projections; a failing cell located by
    differencing its column again."""
    ev, options, probes = state.ev, state.options, state.plan
    layout = ev.problem.layout
    expected = Jacobian("numerical", layout, dict(state.projected), seeds=probes.seeds,
                        producer="probed", row_seeds=probes.rows)
    results = compare_jacobians("reverse", expected, reverse, options.atol, options.rtol,
                                state.tolerances)
    for result in results:
        if result.passed or result.where is None:
            continue
        o, i = result.out_idx, result.in_idx
        g = result.where[1]
        column = numerical_cells(ev, i, probes.seeds[i], g, g + 1, state.scheme)[o][0]
        cells = np.zeros((layout.out_size(o), probes.seeds[i].count))
        cells[:, g] = column[:, 0]
        explain(ev, result, reverse, state.scheme, state.epsilon,
                Jacobian("numerical", layout, {(o, i): cells}))
    return results
