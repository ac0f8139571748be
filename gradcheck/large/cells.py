"""Cells of ``J S``: the columns of a Jacobian block pushed through seeds.

Every compressed, probed or chunked producer builds its blocks from these,
``start:stop`` cell columns at a time (``gradcheck.large.seeds`` for ``S``):

- ``numerical_cells``: finite differences along each column of ``S``, by the
  check's scheme (``gradcheck.numerics.scheme``: central at ``eps``, or
  Richardson-extrapolated with an error estimate; for ``Identity`` seeds
  exactly the dense producers' columns);
- ``forward_cells``: one jvp per column of ``S``;
- ``reverse_row_cells``: vjps of unit grad_outputs (rows of the block),
  multiplied by ``S``.

Seeds meant for extrapolation carry the first step of each coordinate in
their weights (the scheme's ``direction_scale``), so a step ``2**-k`` along a column moves
each coordinate by its own ``h_0`` times its weight, as the dense
extrapolation does.
"""
from __future__ import annotations

import time

import numpy as np

from adcheck.gradcheck.core import budget as budgets
from adcheck.gradcheck.core.analytical import ad_parts
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.jacobian import Jacobian
from adcheck.gradcheck.core.numerical import column_chunk
from adcheck.gradcheck.large.seeds import Seeds
from adcheck.gradcheck.core.sides import FORWARD, REVERSE


def numerical_cells(ev: Evaluator, in_idx: int, seeds: Seeds, start: int, stop: int,
                    scheme) -> dict:
    """``(cells, errors, unresolved)`` by output, each ``(output real size,
    stop - start)``, differenced by ``scheme`` (``numerics.scheme``);
    ``errors`` is ``None`` unless the scheme estimates them, ``unresolved``
    (the cells no step resolved, NaN in ``cells``) ``None`` unless some cell
    is. Columns go in sub-chunks the budget allows (extrapolation holds a few
    dozen values per entry), each written into the arrays of the whole span
    as it comes."""
    width = column_chunk(ev, scheme.copies)
    extrapolated = scheme.estimates_error   # (values and errors written in place)
    if width >= stop - start > 0:   # one sub-chunk: its arrays as they are (no copy)
        return {o: (cells.T, None if errors is None else errors.T,
                    unresolved.T if unresolved is not None and unresolved.any() else None)
                for o, (cells, errors, unresolved) in _numerical_cells(
                    ev, in_idx, seeds, start, stop, scheme).items()}
    # stored a column after another, as they are made (a transposed write is
    # several times slower); extrapolation writes its values and errors there
    p = ev.problem
    found = {o: [np.empty((stop - start, p.layout.out_size(o))).T for _ in range(2)] + [None]
             for o in p.float_out} if extrapolated else {}
    for a in range(start, stop, width):
        b = min(stop, a + width)
        out = {o: tuple(q.T[a - start:b - start] for q in spans[:2])
               for o, spans in found.items()} if extrapolated else None
        part = _numerical_cells(ev, in_idx, seeds, a, b, scheme, out)
        for o, (cells, errors, unresolved) in part.items():
            if o not in found:
                found[o] = [_span(cells, stop - start), None, None]
            spans = found[o]
            if unresolved is not None and unresolved.any() and spans[2] is None:
                # (a mask of the span only when needed: each array of its size is
                # memory touched afresh, which costs as much as filling it)
                spans[2] = np.zeros((stop - start, unresolved.shape[1]), bool).T
            for whole, q in zip(spans, (None if extrapolated else cells, None, unresolved)):
                if whole is not None and q is not None:
                    whole.T[a - start:b - start] = q
    if not found:   # no column at all
        return {o: (q.T.copy(),) + tuple(None if k is None else k.T.copy() for k in rest)
                for o, (q, *rest) in _numerical_cells(ev, in_idx, seeds, start, stop,
                                                      scheme).items()}
    return {o: tuple(spans) for o, spans in found.items()}


def _span(piece, count: int):
    """An array for ``count`` columns like ``piece`` (or ``None``), filled a
    column after another."""
    return None if piece is None else np.empty((count, piece.shape[1]), piece.dtype).T


def _numerical_cells(ev, in_idx, seeds, start, stop, scheme, out=None) -> dict:
    """``(cells, errors, unresolved)`` by output, each ``(stop - start, output
    real size)`` (a row per column, as they are made; extrapolated, into
    ``out`` when given: see ``extrapolated_columns``)."""
    return scheme.cells(ev, in_idx, seeds.directions(start, stop), np.arange(start, stop), out)


def forward_cells(ev: Evaluator, in_idx: int, seeds: Seeds, start: int, stop: int) -> dict:
    """``A S[:, start:stop]`` by output from one jvp per seed column."""
    directions = seeds.directions(start, stop)
    if directions is None:
        return ad_parts(ev, FORWARD, in_idx, start, stop)
    p = ev.problem
    results = FORWARD.products(ev, in_idx, FORWARD.vectors(p, in_idx, directions),
                               f"computing jvps along seed columns {start} to {stop - 1} of "
                               f"input {in_idx}")
    # every float output, as assemble reads them (one without a tangent gets zeros)
    return {o: FORWARD.block(FORWARD.real_rows(p, o, results[o], stop - start))
            for o in p.float_out}


def reverse_row_cells(ev: Evaluator, out_idx: int, seeds: dict, start: int, stop: int,
                      columns: dict | None = None) -> dict:
    """Rows ``start:stop`` of ``A S`` for output ``out_idx`` by input: vjps of
    unit grad_outputs, each row multiplied by that input's seeds (only cell
    columns ``columns[in_idx] = (a, b)`` when given)."""
    rows = ad_parts(ev, REVERSE, out_idx, start, stop)
    cells = {}
    for in_idx, block in rows.items():
        a, b = (columns or {}).get(in_idx, (0, seeds[in_idx].count))
        cells[in_idx] = seeds[in_idx].compress(block, a, b)
    return cells


def assemble(jac: Jacobian, ev: Evaluator, in_idx: int, parts: list) -> None:
    """Join chunks of cells (by output: an array, or ``(cells, errors,
    unresolved)``) into the blocks of ``in_idx``; cells no step resolved go to
    ``jac.unresolved`` (which the report lists)."""
    p = ev.problem
    for o in p.float_out:
        if not parts:
            jac.blocks[o, in_idx] = np.zeros((p.layout.out_size(o), 0))
            if jac.errors is not None:
                jac.errors[o, in_idx] = np.zeros((p.layout.out_size(o), 0))
            continue
        values = [part[o] if isinstance(part[o], np.ndarray) else part[o][0] for part in parts]
        jac.blocks[o, in_idx] = _columns(values)
        if jac.errors is not None:
            jac.errors[o, in_idx] = _columns([part[o][1] for part in parts])
        if not isinstance(parts[0][o], np.ndarray) and any(part[o][2] is not None
                                                            for part in parts):
            jac.unresolved = jac.unresolved or {}
            jac.unresolved[o, in_idx] = np.concatenate(
                [np.zeros(part[o][0].shape, bool) if part[o][2] is None else part[o][2]
                 for part in parts], axis=1)


def _columns(parts: list) -> np.ndarray:
    """Blocks side by side, stored column by column (as they were made)."""
    rows = parts[0].shape[0]
    out = np.empty((sum(part.shape[1] for part in parts), rows)).T
    start = 0
    for part in parts:
        out[:, start:start + part.shape[1]] = part
        start += part.shape[1]
    return out


def seeded_numerical(ev: Evaluator, seeds: dict, scheme, producer: str, note: str) -> Jacobian:
    """``J S`` for every input's seeds, by finite differences along each seed
    column, a budget's chunk of columns at a time."""
    p = ev.problem
    start, before = time.perf_counter(), p.counts["function"]
    jac = Jacobian("numerical", p.layout, errors={} if scheme.estimates_error else None,
                   seeds=seeds, producer=producer, note=note)
    for in_idx in p.diff_in:
        parts = [numerical_cells(ev, in_idx, seeds[in_idx], a, b, scheme)
                 for a, b in budgets.chunks(seeds[in_idx].count,
                                            column_chunk(ev, scheme.copies))]
        assemble(jac, ev, in_idx, parts)
    jac.counts = {"function": p.counts["function"] - before}
    jac.seconds = time.perf_counter() - start
    return jac


def seeded_forward(ev: Evaluator, seeds: dict, producer: str, note: str) -> Jacobian:
    """``A S`` for every input's seeds, one jvp per seed column."""
    p = ev.problem
    start, before = time.perf_counter(), p.counts["jvp"]
    jac = Jacobian("forward", p.layout, seeds=seeds, producer=producer, note=note)
    for in_idx in p.diff_in:
        parts = [forward_cells(ev, in_idx, seeds[in_idx], a, b)
                 for a, b in budgets.chunks(seeds[in_idx].count, ev.batch_size("jvp"))]
        assemble(jac, ev, in_idx, parts)
    jac.counts = {"jvp": p.counts["jvp"] - before}
    jac.seconds = time.perf_counter() - start
    return jac
