"""The reverse-mode Jacobian: row by row, one vjp per output coordinate."""
from __future__ import annotations

import time

import numpy as np

from gradcheck import coords
from gradcheck.jacobian import Jacobian
from gradcheck.problem import Problem


def unit_grad_output(problem: Problem, out_idx: int, row: int) -> np.ndarray:
    """The grad_output selecting output coordinate ``row`` (1 or 1j)."""
    base = problem.out_arrays[out_idx]
    vector = np.zeros(coords.real_size(base.shape, np.iscomplexobj(base)))
    vector[row] = 1.0
    return coords.from_real(vector, base.shape, base.dtype)


def grads_to_real(problem: Problem, grads: dict) -> dict:
    """Real coordinates of each input's gradient (zeros for ``None``)."""
    result = {}
    for in_idx in problem.diff_in:
        grad = grads.get(in_idx)
        size = problem.layout.in_size(in_idx)
        if grad is None:
            result[in_idx] = np.zeros(size)
        elif problem.layout.in_complex[in_idx]:
            result[in_idx] = coords.to_real(grad.astype(np.complex128))
        else:
            result[in_idx] = coords.to_real(np.real(grad))
    return result


def _all_rows(problem: Problem, out_idx: int) -> dict | None:
    """Every row of output ``out_idx``'s blocks from one batched backward."""
    base = problem.out_arrays[out_idx]
    size = problem.layout.out_size(out_idx)
    units = coords.from_real_rows(np.eye(size), base.shape, base.dtype)
    grads = problem.with_extra("vjp", out_idx, units, f"computing the rows for output {out_idx}")
    if grads is None:
        return None
    blocks = {}
    for in_idx in problem.diff_in:
        g = grads.get(in_idx)
        if g is None:
            blocks[in_idx] = np.zeros((size, problem.layout.in_size(in_idx)))
        elif problem.layout.in_complex[in_idx]:
            blocks[in_idx] = coords.to_real_rows(g.astype(np.complex128))
        else:
            blocks[in_idx] = coords.to_real_rows(np.real(g))
    return blocks


def reverse_blocks(problem: Problem, mode: str = "reverse") -> Jacobian:
    """One vjp per output coordinate; row ``r`` of block (o, i) is that vjp.

    For a complex input the vjp is ``dL/dx + 1j dL/dy`` (the conjugate
    Wirtinger convention), which in real coordinates is the row itself.
    """
    start, before = time.perf_counter(), problem.counts["vjp"]
    jac = Jacobian(mode, problem.layout)
    for out_idx in problem.diff_out:
        batch = _all_rows(problem, out_idx)
        if batch is not None:
            for in_idx, block in batch.items():
                jac.blocks[out_idx, in_idx] = block
            continue
        rows = {i: np.zeros((problem.layout.out_size(out_idx), problem.layout.in_size(i)))
                for i in problem.diff_in}
        for row in range(problem.layout.out_size(out_idx)):
            go = unit_grad_output(problem, out_idx, row)
            grads = problem.vjp({out_idx: go}, f"computing row {row} for output {out_idx}")
            for in_idx, vector in grads_to_real(problem, grads).items():
                rows[in_idx][row] = vector
        for in_idx, block in rows.items():
            jac.blocks[out_idx, in_idx] = block
    jac.counts = {"vjp": problem.counts["vjp"] - before}
    jac.seconds = time.perf_counter() - start
    return jac


def reverse_jacobian(func, inputs) -> Jacobian:
    """The Jacobian of ``func`` at ``inputs`` from vector-Jacobian products.

    The function runs once; then, for every real coordinate of every output
    that requires grad, one vjp with a unit grad_output (``1``, or ``1j`` for
    the imaginary part of a complex output) gives one row. Returns a
    ``Jacobian`` labelled ``reverse`` in the layout of ``numerical_jacobian``.
    """
    return reverse_blocks(Problem(func, inputs))
