"""Dense Jacobians beyond the memory budget: built and compared a chunk of columns at a time.

When every entry must be compared (no pattern makes compression pay, or
``jacobian="dense"``) and the blocks do not fit in the budget, each input's
columns are taken ``width`` at a time: the numerical columns (finite
differences or Richardson of those coordinates, themselves in budget-sized
sub-chunks), forward mode's jvps of the same unit vectors, and reverse
mode's rows restricted to those columns. Reverse mode makes rows, not
columns: where its rows of the whole input fit in what the budget leaves a
chunk, they are made once and held, and the chunks are a few columns each
(``_held_width``); else all its rows are recomputed (in budget-sized
batches of vjps) for every chunk of columns, which multiplies their cost by
the number of chunks. The report states which. Each chunk is compared at
once and dropped; a ``compare.Tally`` keeps what the result needs. A
failing pair is then shown as the dense window around its worst entry
(``window.dense_window``), diagnosed there, with the counts of the whole
block. Reentrancy is checked on every row, once: each batch of vjps of the
first chunk (or of the held rows) is made twice and compared whole by
``checks.reentrant``, the dense check's rule (``verdict.repeats``).

A compressed plan whose cells do not fit in the budget (``Plan.streamed``)
goes the same way with the seeds of ``J S`` in place of unit vectors: a
chunk of cell columns at a time (half the width: reverse mode's cells of the
input are held whole when a share of the budget allows, so that its row
groups run once, and are otherwise reconstructed for every chunk, the
pattern checked on the first). A failing cell is located and shown as in a
whole compressed check (``window.explain``). Cells or entries no step
resolves are reported by their count and the first of them (a whole
``Jacobian.unresolved`` mask is not kept).
"""
from __future__ import annotations

import time

import numpy as np

from adcheck.gradcheck.core import budget as budgets
from adcheck.gradcheck.verdict import checks
from adcheck.gradcheck.core import heap
from adcheck.gradcheck.verdict.adjoint import adjoint_results
from adcheck.gradcheck.core.analytical import ad_parts
from adcheck.gradcheck.large.cells import forward_cells, numerical_cells, reverse_row_cells
from adcheck.gradcheck.verdict.compare import Tally, pieces, set_magnitudes, share_zero_scales
from adcheck.gradcheck.large.compressed import _note
from adcheck.gradcheck.large.decompress import ROW_GAIN, reconstruct
from adcheck.gradcheck.verdict.diagnosis import diagnose, subset, whole_block
from adcheck.gradcheck.numerics.precise import as_zero, no_evidence
from adcheck.gradcheck.core.coords import largest_finite
from adcheck.gradcheck.verdict.faults import nonfinite_result, unresolved_result
from adcheck.gradcheck.verdict.repeats import Repeats
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.fast import draw_probes, fast_projections
from adcheck.gradcheck.core.jacobian import Jacobian
from adcheck.gradcheck.core.numerical import column_chunk
from adcheck.gradcheck.large.seeds import Identity
from adcheck.gradcheck.core.sides import FORWARD, REVERSE
from adcheck.gradcheck.large.window import dense_window, explain


def _width(ev: Evaluator, in_idx: int) -> int:
    """Real columns per chunk: the numerical columns of every output, held while
    the sides are compared with them: their values and their tolerances (made
    in the error estimates' array), and for a complex input their complex form.
    A chunk takes what the budget leaves beside the two things held with it:
    the numerical sub-chunks' work (a ``SHARE``) and one batch of vjps or jvps
    (``Evaluator.batch_bytes``: a ``SHARE`` at most, less where the cache
    bounds the batch); the comparisons' temporaries are pieces
    (``compare.PIECE``). Reverse mode's rows are recomputed for every chunk,
    so fewer chunks save their time (a 4,096-long cumsum took a second pass
    of 4,096 vjps for its last column when a chunk took half the budget)."""
    p = ev.problem
    copies = 3 if p.layout.in_complex[in_idx] else 2
    width = max(1, _room(ev) // (_rows(p) * budgets.BYTES * copies))
    return width + (width % 2 if p.layout.in_complex[in_idx] else 0)


def _room(ev: Evaluator) -> int:
    """What the budget leaves for a chunk's arrays (see ``_width``)."""
    return ev.budget - ev.budget // budgets.SHARE - ev.batch_bytes()


def _rows(p) -> int:
    return max(1, sum(p.layout.out_size(o) for o in p.float_out))


def _held_width(ev: Evaluator, in_idx: int):
    """Real columns per chunk when reverse mode's rows of the whole input fit
    in the room a chunk has, once (``None`` when they do not). They are then
    made once and held, and the numerical columns come a few at a time: a
    sub-chunk, or a batch of jvps if that is more. One array of the block's
    size is made instead of two (the numerical values and their tolerances),
    and each is memory touched afresh, which costs as much as filling it."""
    p = ev.problem
    if p.layout.in_size(in_idx) * _rows(p) * budgets.BYTES > _room(ev):
        return None
    width = max(column_chunk(ev, budgets.EXTRAPOLATION_COPIES), ev.batch_size("jvp"))
    return width + (width % 2 if p.layout.in_complex[in_idx] else 0)


def _base(expected, errors, scheme, epsilon, consume: bool = False) -> np.ndarray:
    """The tolerance of each entry but the floor that depends on the whole block
    (the ``Tally``'s): a dense check's rule (the scheme's ``entry_tolerance``,
    with no floor), a piece at a time;
    ``consume``: ``errors`` is the caller's to give, and becomes the result (a
    chunk is a share of the budget: a fresh array of its size costs time)."""
    if not scheme.estimates_error:
        return scheme.entry_tolerance(expected, None, epsilon)
    if errors is None:
        base = np.empty(expected.shape)
    else:
        base = errors if consume else errors.copy()
    for part, e in zip(pieces(base), pieces(expected, base)):   # (temporaries stay in cache)
        part[...] = scheme.entry_tolerance(e, None if errors is None else part, epsilon,
                                           scale=0.0)
    return base


def _magnitude(errors, in_complex):
    """Error estimates in the complex form (of a complex input's two columns)."""
    return np.hypot(errors[:, 0::2], errors[:, 1::2]) if in_complex else errors


def _complex(block, in_complex):
    return block[:, 0::2] + 1j * block[:, 1::2] if in_complex else block


def streamed(ev: Evaluator, report, rng, options, sides: list, epsilon: float,
             plan) -> None:
    """The slow check of a chunked plan, or of a compressed one whose cells do
    not fit in the budget (``plan.compression``; see the module docstring)."""
    p = ev.problem
    start = time.perf_counter()
    comp = plan.compression
    state = ChunkState(ev, options, sides, epsilon, comp, plan.scheme)
    for in_idx in p.diff_in:
        report.results += _input(state, in_idx)
    _finish(ev, report, rng, options, sides, epsilon, state.tallies, comp, plan.scheme)
    report.results += [unresolved_result(key, *found, comp is not None)
                       for key, found in sorted(state.unresolved.items())]
    if comp is None:
        rows = ("its rows made once and held" if state.held_rows else
                "recomputed all rows for each chunk")
        what = (f"dense blocks beyond the memory budget ({ev.budget} bytes): {state.chunks} "
                f"chunks of columns, each built, compared and dropped; reverse mode {rows}; "
                "reentrancy checked on every row")
    else:
        what = (f"{_note(comp, 'J S')}; its cells beyond the memory budget ({ev.budget} "
                f"bytes): {state.chunks} chunks of cell columns, each built, compared and "
                "dropped; reverse mode recomputed its row groups for each chunk; reentrancy "
                "checked on the first chunk")
    label = "chunked" if comp is None else "compressed"
    report.coverage[label] = what
    report.jacobians["numerical"] = Jacobian(
        "numerical", p.layout, producer=label, note=what, seconds=time.perf_counter() - start,
        seeds=None if comp is None else comp.seeds)


class ChunkState:
    """What a streamed check carries from chunk to chunk."""

    def __init__(self, ev, options, sides, epsilon, comp, scheme):
        self.ev, self.options, self.sides = ev, options, sides
        self.epsilon, self.comp, self.scheme = epsilon, comp, scheme
        #: the tallies' floor per unit of a block's largest entry: the part of the
        #: scheme's tolerance that ``_base`` leaves out
        self.floor = scheme.floor(epsilon)
        self.tallies, self.chunks = {}, 0
        #: whether reverse mode's rows were made once and held (``_held_width``)
        self.held_rows = False
        #: (out_idx, in_idx) -> whether the random product refused its row groups
        #: (decided on the first chunk)
        self.refused = {}
        #: (out_idx, in_idx) -> reverse mode's whole cells of the input being
        #: checked, or ``None`` when they are made a chunk at a time
        self.whole = {}
        #: (out_idx, in_idx) -> [cells no step resolved, cells in all, the first]
        self.unresolved = {}
        #: out_idx -> the largest |expected| of each column of the chunk in hand
        self.scales = {}
        #: reentrancy: each batch of reverse mode's rows made twice, one result a pair
        self.repeats = Repeats(ev.problem, options.nondet_tol)

    def seeds(self, in_idx: int):
        if self.comp is None:
            return Identity(self.ev.problem.layout.in_size(in_idx))
        return self.comp.seeds[in_idx]


def _input(state: ChunkState, in_idx: int) -> list:
    """Every chunk of input ``in_idx``'s (cell) columns, built and compared."""
    ev = state.ev
    p = ev.problem
    seeds = state.seeds(in_idx)
    cplx = p.layout.in_complex[in_idx] and state.comp is None
    results = []
    # a compressed check also holds reverse mode's whole cells of the input (a
    # share of the budget): its chunks take an eighth of the budget
    width = _width(ev, in_idx) if state.comp is None else max(1, _width(ev, in_idx) // 8)
    held = None
    if state.comp is None and REVERSE in state.sides and _held_width(ev, in_idx):
        width = _held_width(ev, in_idx)
        held = _held_rows(state, in_idx)
        state.held_rows = True
    for a, b in budgets.chunks(seeds.count, width):
        state.chunks += 1
        expected = expected_span(state, in_idx, seeds, (a, b), cplx)
        if FORWARD in state.sides:
            forward_span(state, expected, in_idx, (a, b), cplx, held)
        if REVERSE not in state.sides:
            continue
        if held is not None and FORWARD in state.sides:
            continue   # (compared beside forward mode's columns)
        if held is not None:
            for o, (e, base) in ((o, expected[o]) for o in held):
                _tally_of(state.tallies, ("reverse", o, in_idx), state.floor).add(
                    e, _complex(held[o][:, a:b], cplx), base, 0, a // (1 + cplx),
                    float(state.scales[o].max(initial=0.0)))
        elif state.comp is None:
            _reverse(state, expected, in_idx, (a, b), again=a == 0)
        else:
            _reverse_cells(state, expected, in_idx, (a, b), again=a == 0)
    state.whole.clear()
    return results + state.repeats.results(in_idx)


def forward_span(state: ChunkState, expected: dict, in_idx: int, span: tuple,
                 cplx: bool, held: dict | None = None) -> None:
    """Forward mode's (cell) columns ``span``, a batch of jvps at a time, each
    compared as it comes (no array of the chunk's size is made for them);
    with reverse mode's rows ``held`` (by output), theirs beside them: one
    comparison serves both where the two are equal bit for bit (a linear
    function's often are), which is the same comparison made twice."""
    a, b = span
    unit = 2 if cplx else 1
    step = max(unit, state.ev.batch_size("jvp") // unit * unit)
    for c0 in range(a, b, step):
        c1 = min(b, c0 + step)
        s0, s1 = (c0 - a) // unit, (c1 - a) // unit
        for o, block in forward_cells(state.ev, in_idx, state.seeds(in_idx), c0, c1).items():
            e, base = expected[o]
            columns = (e[:, s0:s1], _complex(block, cplx), base[:, s0:s1])
            where = (0, c0 // unit, float(state.scales[o][s0:s1].max(initial=0.0)))
            also = []
            if held is not None and o in held:
                reverse = _tally_of(state.tallies, ("reverse", o, in_idx), state.floor)
                rows = _complex(held[o][:, c0:c1], cplx)
                if np.array_equal(rows, columns[1]):
                    also.append(reverse)
                else:
                    reverse.add(columns[0], rows, columns[2], *where)
            _tally_of(state.tallies, ("forward", o, in_idx), state.floor).add(*columns, *where,
                                                                              also=also)


def expected_span(state: ChunkState, in_idx: int, seeds, span: tuple, cplx: bool) -> dict:
    """The numerical (cell) columns ``span`` by output, with the base of their
    tolerances; cells no step resolved count as unresolved and compare as 0
    within an infinite tolerance (no evidence either way)."""
    ev, options = state.ev, state.options
    a, b = span
    expected = {}
    found = numerical_cells(ev, in_idx, seeds, a, b, state.scheme)
    for o, (values, errors, unresolved) in found.items():
        if unresolved is not None and unresolved.any():
            values, errors = as_zero(values, unresolved), no_evidence(errors, unresolved)
            _count_unresolved(state, (o, in_idx), unresolved, a)
        e = _complex(values, cplx)
        base = _base(e, None if errors is None else _magnitude(errors, cplx), state.scheme,
                     state.epsilon, consume=True)
        expected[o] = (e, base)
        # (once per chunk: each tally of it would scan it again for its scale)
        state.scales[o] = _column_scales(e)
        state.tallies.setdefault(("numerical", o, in_idx), Tally(state.floor)).observe(
            e, float(state.scales[o].max(initial=0.0)))
    return expected


def _column_scales(e: np.ndarray) -> np.ndarray:
    """The largest finite ``|e|`` of each column of a chunk."""
    if np.iscomplexobj(e):
        found = np.max(np.abs(e), axis=0, initial=0.0)
    else:
        found = np.maximum(np.max(e, axis=0, initial=0.0), -np.min(e, axis=0, initial=0.0))
    return found if np.isfinite(found).all() else largest_finite(e, axis=0)


def _count_unresolved(state: ChunkState, key: tuple, mask: np.ndarray, col0: int) -> None:
    found = state.unresolved.setdefault(key, [0, 0, None])
    found[0] += int(mask.sum())
    if found[2] is None:
        r, c = np.argwhere(mask)[0]
        found[2] = (int(r), int(c) + col0)
    p = state.ev.problem
    found[1] = p.layout.out_size(key[0]) * (state.seeds(key[1]).count if state.comp else
                                            p.layout.in_size(key[1]))


def _reverse_cells(state: ChunkState, expected: dict, in_idx: int, span: tuple,
                   again: bool) -> None:
    """Cell columns ``span`` of every compressed reverse block: reconstructed
    from row groups where the pattern holds (checked on the first chunk), else
    from every row; ``again`` (the first chunk): built again, for reentrancy."""
    p = state.ev.problem
    for o in p.diff_out:
        e, base = expected[o]
        cells = _reverse_span(state, (o, in_idx), span)
        _tally_of(state.tallies, ("reverse", o, in_idx), state.floor).add(e, cells, base, 0,
                                                                          span[0])
        if again:
            # (a copy: the results keep their arrays, which must not keep the
            # pair's whole cells alive)
            state.repeats.add(o, in_idx, np.array(cells),
                              _reverse_span(state, (o, in_idx), span, again=True), (0, span[0]))


def _reverse_span(state: ChunkState, key: tuple, span: tuple, again: bool = False) -> np.ndarray:
    """Reverse mode's cells of ``key`` in cell columns ``span``: sliced from the
    pair's whole cells when a share of the budget holds them (its row groups
    then run once, not once per chunk), else made for the span (``again``:
    made afresh, for reentrancy)."""
    ev = state.ev
    whole = (0, state.comp.seeds[key[1]].count)
    m = ev.problem.layout.out_size(key[0])
    if not again and key not in state.whole:
        held = budgets.fits(ev.budget // budgets.SHARE, m * whole[1], 1)
        state.whole[key] = _reverse_made(state, key, whole) if held else None
    if not again and state.whole[key] is not None:
        return state.whole[key][:, span[0]:span[1]]
    return _reverse_made(state, key, span)


def _reverse_made(state: ChunkState, key: tuple, span: tuple) -> np.ndarray:
    """Reverse mode's cells of ``key`` in ``span``, from row groups where the
    pattern holds (checked the first time), else from every row."""
    ev, comp = state.ev, state.comp
    out_idx, in_idx = key
    m = ev.problem.layout.out_size(out_idx)
    refused = state.refused
    if comp.rows[key][1] * ROW_GAIN <= m and not refused.get(key):
        cells = reconstruct(ev, comp, key, state.epsilon, span, check=key not in refused,
                            keep=False)
        refused[key] = cells is None
        if cells is not None:
            return cells
    parts = [reverse_row_cells(ev, out_idx, comp.seeds, r0, r1, {in_idx: span})[in_idx]
             for r0, r1 in budgets.chunks(m, ev.batch_size("vjp"))]
    return np.concatenate(parts) if parts else np.zeros((0, span[1] - span[0]))


def _held_rows(state: ChunkState, in_idx: int) -> dict:
    """Reverse mode's rows of every output restricted to input ``in_idx``'s
    columns, made a batch of vjps at a time, by output; each batch made
    twice, for reentrancy (``state.repeats``)."""
    ev = state.ev
    p = ev.problem
    held = {}
    for o in p.diff_out:
        # (a column after another, as the numerical columns are: the chunks'
        # comparisons then read both in pieces of one stretch of memory each)
        held[o] = heap.mapped((p.layout.out_size(o), p.layout.in_size(in_idx)), order="F")
        for r0, r1 in budgets.chunks(p.layout.out_size(o), ev.batch_size("vjp")):
            rows = ad_parts(ev, REVERSE, o, r0, r1)[in_idx]
            held[o][r0:r1] = rows
            # (the batch as made, not the held rows: one layout, no copy)
            state.repeats.add(o, in_idx, rows, ad_parts(ev, REVERSE, o, r0, r1)[in_idx], (r0, 0))
    return held


def _reverse(state: ChunkState, expected: dict, in_idx: int, span: tuple, again: bool) -> None:
    """Columns ``span`` of every reverse block, a batch of rows at a time, each
    compared as it comes; ``again`` (the first chunk): each batch's whole rows
    made twice, for reentrancy (a vjp makes every column of its row: the
    whole block is checked once, as a dense check's second run checks it)."""
    ev = state.ev
    p = ev.problem
    a, b = span
    cplx = p.layout.in_complex[in_idx]
    for o in p.diff_out:
        e, base = expected[o]
        for r0, r1 in budgets.chunks(p.layout.out_size(o), ev.batch_size("vjp")):
            rows = ad_parts(ev, REVERSE, o, r0, r1)[in_idx]
            _tally_of(state.tallies, ("reverse", o, in_idx), state.floor).add(
                e[r0:r1], _complex(rows[:, a:b], cplx), base[r0:r1], r0, a // (2 if cplx else 1))
            if again:
                state.repeats.add(o, in_idx, rows, ad_parts(ev, REVERSE, o, r0, r1)[in_idx],
                                  (r0, 0))


def _finish(ev, report, rng, options, sides, epsilon, tallies, comp, scheme) -> None:
    """Magnitudes, the results of every tally, and the adjoint identity."""
    set_magnitudes(report, tallies)
    tally_results(ev, report, tallies, options, scheme, epsilon, comp)
    if len(sides) == 2 and options.check_adjoint:
        report.results += _adjoint(ev, rng, options, epsilon, report.magnitudes)


def _adjoint(ev, rng, options, epsilon, magnitudes) -> list:
    """The adjoint identity from one vjp and one jvp per probe (no Jacobian
    needed): ``<v, J_forward u>`` against ``<J_reverse^T v, u>``."""
    probes = draw_probes(ev.problem, rng, options.probes)
    reverse, jtv = fast_projections(ev, REVERSE, probes)
    forward, ju = fast_projections(ev, FORWARD, probes)
    reverse.mode, forward.mode = "reverse", "forward"
    return adjoint_results(probes, reverse, jtv, forward, ju, epsilon, options.nondet_tol,
                           magnitudes)


def _tally_of(tallies: dict, key: tuple, floor: float) -> Tally:
    """The tally of ``key`` (made with ``floor`` the first time)."""
    return tallies.setdefault(key, Tally(floor))


def tally_results(ev, report, tallies, options, scheme, epsilon, comp=None) -> None:
    """One ``Result`` per (side, pair); a failure shown by its window (for a
    failing cell, around the entry ``window.explain`` locates in it)."""
    p = ev.problem
    if comp is None or not comp.seeds:   # (cells would need a floor per cell column)
        share_zero_scales(tallies)
    for (mode, o, i), tally in sorted(tallies.items()):
        if mode == "numerical":
            continue
        result = tally.result(mode, mode, "numerical", o, i)
        if not result.passed and comp is not None:
            explain(ev, result, Jacobian(mode, p.layout, seeds=comp.seeds), scheme, epsilon)
        elif not result.passed:
            _window(ev, result, tally, scheme, epsilon)
        report.results.append(result)
    for o in p.float_out:
        if o in p.diff_out:
            continue
        for i in p.diff_in:   # an output that does not require grad: numerical must be zero
            largest = np.array([tallies[("numerical", o, i)].scale])
            report.results.append(checks.detached_result(o, i, largest, options.atol))
    report.results += _nonfinite(tallies)


def _nonfinite(tallies: dict) -> list:
    """NaN or inf in blocks compared a chunk at a time: the dense check's
    failures (``faults.nonfinite_results``) from the tallies' counts, the
    numerical side's once per pair."""
    found, seen = [], set()
    for (mode, o, i), tally in sorted(tallies.items()):
        for side, (count, where, value, expected) in sorted(tally.nonfinite.items()):
            who = "numerical" if side == "expected" else mode
            if (who, o, i) not in seen:
                seen.add((who, o, i))
                found.append(nonfinite_result(who, (o, i), count, tally.counts["entries"],
                                              where, value, expected))
    return found


def _window(ev, result, tally, scheme, epsilon) -> None:
    """The dense window around a failing pair's worst entry, and its diagnosis."""
    p = ev.problem
    cplx = p.layout.in_complex[result.in_idx]
    unit = 2 if cplx else 1
    row, col = result.where
    win = dense_window(ev, result.mode, result.out_idx, result.in_idx, row, col * unit, scheme)
    e, a = _complex(win["expected"], cplx), _complex(win["actual"], cplx)
    err = None if win["errors"] is None else _magnitude(win["errors"], cplx)
    tol = _base(e, err, scheme, epsilon) + tally.floor()
    result.expected, result.actual, result.origin = e, a, (win["row"], win["column"])
    found = diagnose(win["expected"], win["actual"], np.real(tol), result.mode,
                     p.layout.out_complex[result.out_idx], cplx, origin=result.origin,
                     whole=False)
    # what the window cannot say alone, the whole block's counts say (the rules of
    # a dense diagnosis, on the Tally's counts)
    counts = tally.counts
    whole = whole_block(result.mode, counts["nonzero"], counts["expected"], counts["actual"])
    if whole:
        found = whole
    elif found and found.startswith("only "):
        rows, cols = p.layout.out_size(result.out_idx), p.layout.in_size(result.in_idx) // unit
        found = subset(counts["wrong"], counts["active"], counts["diagonal"], tally.first,
                       rows == cols > 1)
    if found and "times numerical" in found and not _factor_holds(tally):
        found = None    # the window's factor is not the whole block's
    result.diagnosis = found
    result.detail = ("a dense block beyond the memory budget, compared a chunk of columns at a "
                     "time; shown: the window around the worst entry")


def _factor_holds(tally) -> bool:
    """Whether ``actual = c * expected`` over the whole block (from its sums)."""
    ee, ea, aa = tally.sums
    if ee <= 0 or aa <= 0:
        return False
    c = ea / ee
    residual = aa - 2 * c * ea + c * c * ee
    return residual <= 1e-10 * aa
