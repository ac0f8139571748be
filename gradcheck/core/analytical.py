"""The analytical Jacobians: reverse mode row by row, forward mode column by column.

Both are one producer, ``ad_blocks``, over a ``Side``: for every carrier
index (an output in reverse mode, an input in forward mode), the unit vectors
of its real coordinates (``1``, or ``1j`` for the imaginary part of a complex
element) are pushed through the side's product in one stacked call; each
result is a row (a vjp) or a column (a jvp) of the blocks of that index.
For a complex input the vjp is ``dL/dx + 1j dL/dy`` (the conjugate Wirtinger
convention), which in real coordinates is the row itself. The unit vectors
go in chunks the memory budget allows (``ad_parts``).
"""
from __future__ import annotations

import time

import numpy as np

from adcheck.gradcheck.core import budget as budgets
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.jacobian import Jacobian
from adcheck.gradcheck.core.sides import Side


def ad_parts(ev: Evaluator, side: Side, idx: int, start: int, stop: int) -> dict:
    """The ``side.part``s ``start:stop`` (rows of reverse mode, columns of forward
    mode) of carrier ``idx``'s blocks, by receiver: for unit vectors on those
    real coordinates, their products, one stacked call."""
    p = ev.problem
    n = side.carrier_size(p.layout, idx)
    units = np.eye(stop - start, n, start)   # (row k is the unit vector of start + k)
    where = f"for {side.carrier} {idx}"
    each = f"computing {side.part} {{k}} {where}"
    if (start, stop) != (0, n):  # the loop counts from 0 in each chunk
        each = f"computing {side.part} {{k}} of {side.part}s {start} to {stop - 1} {where}"
    results = side.products(ev, idx, side.vectors(p, idx, units),
                            f"computing the {side.part}s {where}", each)
    return {r: side.block(side.real_rows(p, r, results[r], stop - start))
            for r in side.receivers(p)}


def ad_blocks(ev: Evaluator, side: Side) -> Jacobian:
    """The ``side.mode`` Jacobian of the problem: one product per real coordinate
    of every carrier, batched by the evaluator when it can."""
    p = ev.problem
    start, before = time.perf_counter(), p.counts[side.product]
    jac = Jacobian(side.mode, p.layout)
    for idx in side.carriers(p):
        n = side.carrier_size(p.layout, idx)
        # (no coordinate at all: one empty batch still carries the prefetched vectors)
        chunks = list(budgets.chunks(n, ev.batch_size(side.product))) or [(0, 0)]
        if len(chunks) == 1:   # one batch: its parts are the blocks, as they are laid out
            for r, part in ad_parts(ev, side, idx, 0, n).items():
                jac.blocks[side.key(idx, r)] = part
            continue
        for r in side.receivers(p):
            # a block of columns is stored transposed, as a batch of them is made
            jac.blocks[side.key(idx, r)] = side.block(np.empty((n, side.receiver_size(p.layout,
                                                                                      r))))
        for a, b in chunks:
            for r, part in ad_parts(ev, side, idx, a, b).items():
                if side.part == "row":
                    jac.blocks[side.key(idx, r)][a:b] = part
                else:
                    jac.blocks[side.key(idx, r)][:, a:b] = part
    jac.counts = {side.product: p.counts[side.product] - before}
    jac.seconds = time.perf_counter() - start
    return jac
