"""Reverse mode in compressed form: ``A S`` from vjps of row groups.

A vjp gives rows of ``A``, not columns, so ``A S`` cannot be pushed through
reverse mode directly. Rows that share no column of the pattern are grouped
(``Pattern.row_colours``, for each input on its own) and each group's rows,
with random weights ``r_i``, are one grad_output: in the result, column
``j`` holds ``r_i A[i, j]`` for the one pattern row ``i`` of the group that
meets it. That reconstructs every pattern entry, hence the cells
``w_j A[i, j]``, with as many vjps as row groups. It is exact only if ``A``
has no entry off the pattern, which one random product checks
(``gradcheck.large.compressed``, point 3); when it does not hold, or when there are
not many fewer groups than rows, that pair's cells are computed from all of
``A``'s rows, ``M`` vjps multiplied by ``S``.
"""
from __future__ import annotations

import time

import numpy as np

from adcheck.gradcheck.core import budget as budgets
from adcheck.gradcheck.verdict.adjoint import ADJOINT_ULPS
from adcheck.gradcheck.large.cells import reverse_row_cells
from adcheck.gradcheck.large.compressed import Compression, _note
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.jacobian import Jacobian
from adcheck.gradcheck.core.sides import REVERSE

#: reconstruct only when the row groups are this many times fewer than rows
ROW_GAIN = 2


def _fill(cells, table, t0, block, rows, h, r_w, weights, span, probe) -> float:
    """Reconstructed cells of ``rows`` (row group ``h`` of each, counted from the
    batch's first) from ``block`` (one gradient row per group of the batch),
    cell columns ``span`` of them; ``table``: each row's pattern column per
    cell column from ``t0`` on (-1: no entry). Returns the rows' part of
    ``v^T A u`` over the entries of ``table`` (0 without ``probe``)."""
    ok = table >= 0
    safe = np.where(ok, table, 0)
    entry = np.where(ok, block[h[:, None], safe] / r_w[rows][:, None], 0.0)
    a, b = span[0] - t0, span[1] - t0
    cells[rows] = weights[safe[:, a:b]] * entry[:, a:b]
    if probe is None:
        return 0.0
    v, u = probe
    return float(np.sum(v[rows][:, None] * entry * u[safe]))


def reconstruct(ev: Evaluator, comp: Compression, key: tuple, epsilon: float,
                span: tuple | None = None, check: bool = True, keep: bool = True):
    """The cells of pair ``key`` (cell columns ``span``, default all) from its
    row groups, or ``None`` when ``check`` and the random product shows an
    entry of ``A`` off the pattern. Unless ``keep`` and every cell column is
    asked for, each batch's table of pattern columns is made afresh (whole,
    to check the pattern, else only the span's columns) instead of held for
    the whole block (a chunked check holds no whole table)."""
    p = ev.problem
    out_idx, in_idx = key
    groups, count, r_w, (v, u) = comp.rows[key]
    seeds = comp.seeds[in_idx]
    m = p.layout.out_size(out_idx)
    span = (0, seeds.count) if span is None else span
    whole = keep and span == (0, seeds.count)
    order = np.argsort(groups, kind="stable")
    starts = np.searchsorted(groups[order], np.arange(count + 1))
    cells = np.zeros((m, span[1] - span[0]))
    sum_pattern = 0.0
    for h0, h1 in budgets.chunks(count, ev.batch_size("vjp")):
        vectors = np.zeros((h1 - h0, len(groups)))
        rows = order[starts[h0]:starts[h1]]
        vectors[groups[rows] - h0, rows] = r_w[rows]
        found = REVERSE.products(ev, out_idx, REVERSE.vectors(p, out_idx, vectors),
                                 f"computing vjps of row groups {h0} to {h1 - 1} of output "
                                 f"{out_idx}")
        block = REVERSE.real_rows(p, in_idx, found[in_idx], h1 - h0)
        t0, t1 = (0, seeds.count) if check else span
        table = seeds.cell_table(out_idx, m)[rows] if whole else \
            seeds.cell_rows(out_idx, rows, t0, t1)
        sum_pattern += _fill(cells, table, t0, block, rows, groups[rows] - h0, r_w,
                             seeds.weights, span, (v, u) if check else None)
    if check and not _pattern_holds(ev, key, v, u, sum_pattern, epsilon):
        return None
    return cells


def _pattern_holds(ev: Evaluator, key: tuple, v, u, sum_pattern: float, epsilon: float) -> bool:
    """Whether one more vjp's ``v^T A u`` equals the sum over the pattern's entries."""
    p = ev.problem
    out_idx, in_idx = key
    found = REVERSE.products(ev, out_idx, REVERSE.vectors(p, out_idx, v[None]),
                             f"checking the sparsity pattern of output {out_idx}")
    row = REVERSE.real_rows(p, in_idx, found[in_idx], 1)[0]
    direct = float(row @ u)
    scale = abs(sum_pattern) + float(np.abs(row) @ np.abs(u))
    return abs(direct - sum_pattern) <= ADJOINT_ULPS * epsilon * scale + 1e-300


def _all_rows(ev: Evaluator, comp: Compression, out_idx: int) -> dict:
    """The cells of ``out_idx`` from every row of ``A``, multiplied by ``S``."""
    p = ev.problem
    m = p.layout.out_size(out_idx)
    parts = [reverse_row_cells(ev, out_idx, comp.seeds, a, b)
             for a, b in budgets.chunks(m, ev.batch_size("vjp"))]
    return {i: np.concatenate([part[i] for part in parts]) if parts else
            np.zeros((0, comp.seeds[i].count)) for i in p.diff_in}


def compressed_reverse(ev: Evaluator, comp: Compression, epsilon: float) -> Jacobian:
    """``A S`` from row groups where the pattern holds, else from every row."""
    p = ev.problem
    start, before = time.perf_counter(), p.counts["vjp"]
    jac = Jacobian("reverse", p.layout, seeds=comp.seeds, producer="compressed",
                   note=_note(comp, "reverse mode A S from vjps of row groups"))
    refused = []
    for out_idx in p.diff_out:
        m = p.layout.out_size(out_idx)
        for in_idx in p.diff_in:
            key = (out_idx, in_idx)
            if comp.rows[key][1] * ROW_GAIN <= m:
                jac.blocks[key] = reconstruct(ev, comp, key, epsilon)
                if jac.blocks[key] is None:
                    refused.append(key)
        missing = [i for i in p.diff_in if jac.blocks.get((out_idx, i)) is None]
        if missing:
            for in_idx, block in _all_rows(ev, comp, out_idx).items():
                if in_idx in missing:
                    jac.blocks[out_idx, in_idx] = block
    if refused:
        jac.note += (f"; the vjp has entries off the pattern read from its rows for "
                     f"(output, input) {refused}, so their cells came from every row")
    jac.counts = {"vjp": p.counts["vjp"] - before}
    jac.seconds = time.perf_counter() - start
    return jac
