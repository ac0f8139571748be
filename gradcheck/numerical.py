"""The numerical Jacobian: central differences, one column per coordinate."""
from __future__ import annotations

import time

import numpy as np

from gradcheck import coords
from gradcheck.jacobian import Jacobian
from gradcheck.problem import Problem


def perturbed(problem: Problem, in_idx: int, coordinate: int, step: float) -> dict:
    """Outputs (real coordinates) with one input coordinate moved by ``step``."""
    base = problem.arrays[in_idx]
    vector = coords.to_real(base)
    vector[coordinate] += step
    array = coords.from_real(vector, base.shape, base.dtype)
    outs = problem.evaluate({in_idx: array}, f"computing finite differences for input {in_idx}")
    return {o: coords.to_real(v) for o, v in outs.items()}


def directional(problem: Problem, directions: dict, step: float) -> dict:
    """Outputs (real coordinates) at ``inputs + step * directions`` (real)."""
    overrides = {}
    for in_idx, direction in directions.items():
        base = problem.arrays[in_idx]
        moved = coords.to_real(base) + step * direction
        overrides[in_idx] = coords.from_real(moved, base.shape, base.dtype)
    outs = problem.evaluate(overrides, "computing a directional finite difference")
    return {o: coords.to_real(v) for o, v in outs.items()}


def perturbed_batch(problem: Problem, in_idx: int, steps: np.ndarray, what: str,
                    columns=None) -> dict | None:
    """``perturbed`` for every step ``steps[k, j]`` of coordinate ``columns[j]``
    (default: every coordinate of input ``in_idx``), in one batched evaluation:
    by output, an array of shape ``(len(steps), len(columns), output real
    size)``; ``None`` if it cannot batch."""
    base = problem.arrays[in_idx]
    vector = coords.to_real(base)
    n = vector.size
    if n == 0:
        return None     # nothing to perturb: the loop handles empty inputs
    columns = np.arange(n) if columns is None else np.asarray(columns, dtype=np.intp)
    moved = np.broadcast_to(vector, (len(steps), len(columns), n)).copy()
    moved[:, np.arange(len(columns)), columns] += steps
    arrays = coords.from_real_rows(moved.reshape(-1, n), base.shape, base.dtype)
    outs = problem.evaluate_batch(in_idx, arrays, what)
    if outs is None:
        return None
    return {o: coords.to_real_rows(v).reshape(len(steps), len(columns),
                                               problem.layout.out_size(o))
            for o, v in outs.items()}


def central_blocks(problem: Problem, eps: float) -> Jacobian:
    """Central differences at step ``eps`` for every float output."""
    start, before = time.perf_counter(), problem.counts["function"]
    jac = Jacobian("numerical", problem.layout)
    outs = problem.float_out
    for in_idx in problem.diff_in:
        n_in = problem.layout.in_size(in_idx)
        steps = np.array([[eps] * n_in, [-eps] * n_in])
        both = perturbed_batch(problem, in_idx, steps,
                               f"computing finite differences for input {in_idx}")
        if both is not None:
            for o in outs:
                jac.blocks[o, in_idx] = ((both[o][0] - both[o][1]) / (2 * eps)).T
            continue
        cols = {o: np.zeros((problem.layout.out_size(o), n_in)) for o in outs}
        for c in range(n_in):
            plus = perturbed(problem, in_idx, c, eps)
            minus = perturbed(problem, in_idx, c, -eps)
            for o in outs:
                cols[o][:, c] = (plus[o] - minus[o]) / (2 * eps)
        for o in outs:
            jac.blocks[o, in_idx] = cols[o]
    jac.counts = {"function": problem.counts["function"] - before}
    jac.seconds = time.perf_counter() - start
    return jac


def numerical_jacobian(func, inputs, *, eps: float = 1e-6, precise: bool = False) -> Jacobian:
    """The Jacobian of ``func`` at ``inputs`` by finite differences.

    Each real coordinate of each input that requires grad is moved by
    ``+eps`` and ``-eps`` (a complex element along its real and then its
    imaginary axis) and the outputs' real coordinates are differenced:
    ``(f(x + eps e_c) - f(x - eps e_c)) / (2 eps)``. Returns a ``Jacobian``
    labelled ``numerical``; ``jac[out_idx, in_idx]`` is a real array of shape
    ``(output real size, input real size)``.

    With ``precise=True`` the entries come from Richardson extrapolation over
    a sequence of steps (``eps`` is then ignored) and ``jac.errors`` holds an
    estimate of each entry's absolute error.
    """
    problem = Problem(func, inputs)
    if precise:
        from gradcheck.richardson import richardson_blocks
        return richardson_blocks(problem)
    return central_blocks(problem, eps)
