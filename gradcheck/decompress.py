"""Reverse mode in compressed form: ``A S`` from vjps of row groups.

A vjp gives rows of ``A``, not columns, so ``A S`` cannot be pushed through
reverse mode directly. Rows that share no column of the pattern are grouped
(``Pattern.row_colours``, refined over the inputs) and each group's rows,
with random weights ``r_i``, are one grad_output: in the result, column
``j`` holds ``r_i A[i, j]`` for the one pattern row ``i`` of the group that
meets it. That reconstructs every pattern entry, hence the cells
``w_j A[i, j]``, with as many vjps as row groups. It is exact only if ``A``
has no entry off the pattern, which one random product checks
(``gradcheck.compressed``, point 3); when it does not hold, that output's
cells are computed from all of ``A``'s rows, ``M`` vjps multiplied by ``S``.
"""
from __future__ import annotations

import time

import numpy as np

from gradcheck import budget as budgets
from gradcheck.adjoint import ADJOINT_ULPS
from gradcheck.cells import reverse_row_cells
from gradcheck.compressed import Compression, _note
from gradcheck.evaluation import Evaluator
from gradcheck.jacobian import Jacobian
from gradcheck.sides import REVERSE

#: reconstruct only when the row groups are this many times fewer than rows
ROW_GAIN = 2


def _fill(ev, comp, out_idx, cells, grads, rows, groups, h0, r_w, probe) -> float:
    """Reconstructed cells of ``rows`` (all in row groups ``h0`` onwards) from
    ``grads`` (by input, one row per group); returns their part of ``v^T A u``."""
    total = 0.0
    v, u = probe
    for in_idx, block in grads.items():
        seeds = comp.seeds[in_idx]
        h = groups[rows] - h0
        for g in range(seeds.count):
            j = seeds.locate(out_idx, rows, g)
            ok = j >= 0
            entry = block[h[ok], j[ok]] / r_w[rows[ok]]
            cells[in_idx][rows[ok], g] = seeds.weights[j[ok]] * entry
            total += float(np.sum(v[rows[ok]] * entry * u[in_idx][j[ok]]))
    return total


def _reconstruct(ev: Evaluator, comp: Compression, out_idx: int, epsilon: float):
    """The cells of ``out_idx`` by input from row groups, or ``None`` when the
    random product shows an entry of ``A`` off the pattern."""
    p = ev.problem
    groups, count, r_w, (v, u) = comp.rows[out_idx]
    m = p.layout.out_size(out_idx)
    order = np.argsort(groups, kind="stable")
    starts = np.searchsorted(groups[order], np.arange(count + 1))
    cells = {i: np.zeros((m, comp.seeds[i].count)) for i in p.diff_in}
    sum_pattern = 0.0
    for h0, h1 in budgets.chunks(count, ev.batch_size("vjp")):
        vectors = np.zeros((h1 - h0, m))
        rows = order[starts[h0]:starts[h1]]
        vectors[groups[rows] - h0, rows] = r_w[rows]
        found = REVERSE.products(ev, out_idx, REVERSE.vectors(p, out_idx, vectors),
                                 f"computing vjps of row groups {h0} to {h1 - 1} of output "
                                 f"{out_idx}")
        grads = {i: REVERSE.real_rows(p, i, found[i], h1 - h0) for i in p.diff_in}
        sum_pattern += _fill(ev, comp, out_idx, cells, grads, rows, groups, h0, r_w, (v, u))
    found = REVERSE.products(ev, out_idx, REVERSE.vectors(p, out_idx, v[None]),
                             f"checking the sparsity pattern of output {out_idx}")
    direct = 0.0
    scale = abs(sum_pattern)
    for i in p.diff_in:
        row = REVERSE.real_rows(p, i, found[i], 1)[0]
        direct += float(row @ u[i])
        scale += float(np.abs(row) @ np.abs(u[i]))
    if abs(direct - sum_pattern) > ADJOINT_ULPS * epsilon * scale + 1e-300:
        return None
    return cells


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
    fallbacks = []
    for out_idx in p.diff_out:
        cells = None
        if comp.rows[out_idx][1] * ROW_GAIN <= p.layout.out_size(out_idx):
            cells = _reconstruct(ev, comp, out_idx, epsilon)
            if cells is None:
                fallbacks.append(out_idx)
        if cells is None:
            cells = _all_rows(ev, comp, out_idx)
        for in_idx, block in cells.items():
            jac.blocks[out_idx, in_idx] = block
    if fallbacks:
        jac.note += (f"; the vjp of output(s) {fallbacks} has entries off the pattern read "
                     "from its rows, so their cells came from every row")
    jac.counts = {"vjp": p.counts["vjp"] - before}
    jac.seconds = time.perf_counter() - start
    return jac

