"""The forward-mode Jacobian: column by column, one jvp per input coordinate."""
from __future__ import annotations

import time

import numpy as np

from gradcheck import coords
from gradcheck.jacobian import Jacobian
from gradcheck.problem import Problem


def tangents_to_real(problem: Problem, tangents: dict) -> dict:
    """Real coordinates of each output tangent (zeros for ``None``)."""
    result = {}
    for out_idx in problem.float_out:
        tangent = tangents.get(out_idx)
        size = problem.layout.out_size(out_idx)
        result[out_idx] = np.zeros(size) if tangent is None else coords.to_real(tangent)
    return result


def forward_blocks(problem: Problem, mode: str = "forward") -> Jacobian:
    """One jvp per input coordinate; column ``c`` of block (o, i) is that jvp."""
    start, before = time.perf_counter(), problem.counts["jvp"]
    jac = Jacobian(mode, problem.layout)
    for in_idx in problem.diff_in:
        base = problem.arrays[in_idx]
        n_in = problem.layout.in_size(in_idx)
        units = coords.from_real_rows(np.eye(n_in), base.shape, base.dtype)
        batch = problem.with_extra("jvp", in_idx, units,
                                   f"computing the columns for input {in_idx}")
        if batch is not None:
            for o in problem.diff_out:
                jac.blocks[o, in_idx] = coords.to_real_rows(batch[o]).T
            continue
        cols = {o: np.zeros((problem.layout.out_size(o), n_in)) for o in problem.diff_out}
        for c in range(n_in):
            unit = np.zeros(n_in)
            unit[c] = 1.0
            tangent = coords.from_real(unit, base.shape, base.dtype)
            outs = problem.jvp({in_idx: tangent}, f"computing column {c} for input {in_idx}")
            real = tangents_to_real(problem, outs)
            for o in problem.diff_out:
                cols[o][:, c] = real[o]
        for o, block in cols.items():
            jac.blocks[o, in_idx] = block
    jac.counts = {"jvp": problem.counts["jvp"] - before}
    jac.seconds = time.perf_counter() - start
    return jac


def forward_jacobian(func, inputs) -> Jacobian:
    """The Jacobian of ``func`` at ``inputs`` from Jacobian-vector products.

    For every real coordinate of every input that requires grad, the function
    runs once on dual tensors whose tangent is that unit direction (``1``, or
    ``1j`` for the imaginary part of a complex input); the output tangents
    give one column. Returns a ``Jacobian`` labelled ``forward``.
    """
    return forward_blocks(Problem(func, inputs))
