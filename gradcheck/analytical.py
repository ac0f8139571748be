"""The analytical Jacobians: reverse mode row by row, forward mode column by column.

Both are one producer, ``ad_blocks``, over a ``Side``: for every carrier
index (an output in reverse mode, an input in forward mode), the unit vectors
of its real coordinates (``1``, or ``1j`` for the imaginary part of a complex
element) are pushed through the side's product in one stacked call; each
result is a row (a vjp) or a column (a jvp) of the blocks of that index.
For a complex input the vjp is ``dL/dx + 1j dL/dy`` (the conjugate Wirtinger
convention), which in real coordinates is the row itself.
"""
from __future__ import annotations

import time

import numpy as np

from gradcheck.evaluation import Evaluator
from gradcheck.jacobian import Jacobian
from gradcheck.sides import Side


def ad_blocks(ev: Evaluator, side: Side) -> Jacobian:
    """The ``side.mode`` Jacobian of the problem: one product per real coordinate
    of every carrier, batched by the evaluator when it can."""
    p = ev.problem
    start, before = time.perf_counter(), p.counts[side.product]
    jac = Jacobian(side.mode, p.layout)
    for idx in side.carriers(p):
        n = side.carrier_size(p.layout, idx)
        units = side.vectors(p, idx, np.eye(n))
        where = f"for {side.carrier} {idx}"
        results = side.products(ev, idx, units, f"computing the {side.part}s {where}",
                                f"computing {side.part} {{k}} {where}")
        for r in side.receivers(p):
            jac.blocks[side.key(idx, r)] = side.block(side.real_rows(p, r, results[r], n))
    jac.counts = {side.product: p.counts[side.product] - before}
    jac.seconds = time.perf_counter() - start
    return jac
