"""The numerical Jacobian of a dense or chunked plan: Richardson's
extrapolation (``richardson``) of every coordinate column of each input, a
chunk of columns at a time, with the second ladder of the coordinates far
below its first step or far above a unit (``secondladder``)."""
from __future__ import annotations

import time

import numpy as np

from adcheck.gradcheck.core import budget as budgets
from adcheck.gradcheck.core import coords
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.jacobian import Jacobian
from adcheck.gradcheck.core.numerical import column_chunk
from adcheck.gradcheck.numerics.quotients import evaluated
from adcheck.gradcheck.numerics.richardson import _steps, columns_work
from adcheck.gradcheck.numerics.secondladder import coordinates_work
from adcheck.gradcheck.numerics.together import together


def richardson_blocks(ev: Evaluator, taken: dict | None = None) -> Jacobian:
    """The numerical Jacobian by extrapolation, with ``errors`` filled;
    ``taken``: blocks (by key, every output of their input) known otherwise,
    whose input's columns are not differenced (``gradcheck.core.reuse_gg``).
    The inputs' evaluations share calls where they can (``together``)."""
    problem = ev.problem
    start, before = time.perf_counter(), problem.counts["function"]
    jac = Jacobian("numerical", problem.layout, errors={})
    width = column_chunk(ev, budgets.EXTRAPOLATION_COPIES)
    known = {i for _, i in taken} if taken else set()
    works = {i: _input_work(ev, i, width) for i in problem.diff_in if i not in known}
    # (one chunk of columns each: their quotients are held side by side)
    if ev.shares_calls() and len(works) > 1 and \
            all(problem.layout.in_size(i) <= width for i in works):
        found = together(ev, works)
    else:   # (input by input as the blocks are filled: one input's parts held at a time)
        found = {}
    for in_idx in problem.diff_in:
        if in_idx in known:   # (exact products: no truncation error, only rounding)
            for o in problem.float_out:
                jac.blocks[o, in_idx] = taken[o, in_idx]
                jac.errors[o, in_idx] = np.zeros_like(taken[o, in_idx])
            continue
        parts = found.pop(in_idx) if in_idx in found else evaluated(ev, works[in_idx])
        for o in problem.float_out:
            jac.blocks[o, in_idx] = np.concatenate([q[0][o][0] for q in parts]).T.copy()
            jac.errors[o, in_idx] = np.concatenate([q[0][o][1] for q in parts]).T.copy()
            unresolved = np.concatenate([q[1][o] for q in parts]).T
            if unresolved.any():
                jac.unresolved = jac.unresolved or {}
                jac.unresolved[o, in_idx] = unresolved.copy()
    jac.counts = {"function": problem.counts["function"] - before}
    jac.seconds = time.perf_counter() - start
    return jac


def _input_work(ev: Evaluator, in_idx: int, width: int):
    """A generator of the evaluations (``quotients.evaluated``) of input
    ``in_idx``'s columns, ``width`` at a time, returning each chunk's
    ``columns_work`` result."""
    x = coords.to_real(ev.problem.arrays[in_idx])
    parts = []
    for a, b in budgets.chunks(x.size, width):
        parts.append((yield from coordinates_work(ev, in_idx, x[a:b], np.arange(a, b))))
    if not parts:   # no coordinate at all
        parts.append((yield from columns_work(ev, in_idx, _steps(x))))
    return parts
