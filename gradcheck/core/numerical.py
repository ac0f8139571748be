"""The numerical Jacobian: central differences, one column per coordinate.

Columns are built in chunks the memory budget allows (``gradcheck.core.budget``):
each chunk's perturbed inputs are one stacked evaluation, so no array of
``2 N`` perturbed inputs or outputs is ever held at once.
"""
from __future__ import annotations

import time

import numpy as np

from adcheck.gradcheck.core import beside, coords
from adcheck.gradcheck.core import budget as budgets
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.jacobian import Jacobian
from adcheck.gradcheck.core.quiet import quiet, restore
from adcheck.gradcheck.errors import GradcheckError


def perturbed_outputs(ev: Evaluator, in_idx: int, steps: np.ndarray, what: str,
                      columns=None, tolerant: bool = False, directions=None, extra=None):
    """The outputs with coordinate ``columns[j]`` of input ``in_idx`` moved by
    ``steps[k, j]`` (default: every coordinate), in real coordinates: by output,
    an array of shape ``(len(steps), len(columns), output real size)``.
    ``directions`` (one real vector per column, in the input's coordinates)
    moves the input along ``directions[j]`` instead of along coordinate
    ``columns[j]``. ``tolerant``: a point where the function raises gives NaN
    outputs. ``extra`` (moves, one real vector per row): the input moved by each
    too, in the same evaluation; then ``(outputs, their outputs by output)``."""
    arrays, shape = perturbed_points(ev.problem, in_idx, steps, columns, directions, extra)
    outs = ev.outputs_at(in_idx, arrays, what, f"computing finite differences for input {in_idx}",
                         tolerant)
    return by_step(ev.problem, outs, shape, extra is not None)


def perturbed_points(p, in_idx: int, steps: np.ndarray, columns, directions, extra) -> tuple:
    """``perturbed_outputs``'s points of input ``in_idx``, stacked, and
    ``(len(steps), width)`` (extra rows after those)."""
    base = p.arrays[in_idx]
    vector = coords.to_real(base)
    n = vector.size
    width = len(directions) if directions is not None else n if columns is None else len(columns)
    count = len(steps) * width
    points = np.empty((count + (0 if extra is None else len(extra)), n))
    moved = points[:count].reshape(len(steps), width, n)
    if directions is not None:
        np.multiply(steps[:, :, None], np.asarray(directions)[None, :, :], out=moved)
        moved += vector
    else:
        columns = np.arange(n) if columns is None else np.asarray(columns, dtype=np.intp)
        moved[...] = vector
        moved[:, np.arange(len(columns)), columns] += steps
    if extra is not None:
        np.add(vector, extra, out=points[count:])
    return coords.from_real_rows(points, base.shape, base.dtype), (len(steps), width)


def by_step(p, outs: dict, shape: tuple, extra: bool):
    """``perturbed_outputs``'s result from the outputs at ``perturbed_points``."""
    count = shape[0] * shape[1]
    real = {o: coords.to_real_rows(v) for o, v in outs.items()}
    found = {o: v[:count].reshape(*shape, p.layout.out_size(o)) for o, v in real.items()}
    return (found, {o: v[count:] for o, v in real.items()}) if extra else found


def central_columns(ev: Evaluator, in_idx: int, eps: float, columns=None,
                    directions=None) -> dict:
    """Central differences at step ``eps`` of input ``in_idx``'s coordinates
    ``columns`` (or along ``directions``, see ``perturbed_outputs``): by output,
    a ``(output real size, len(columns))`` block."""
    count = len(directions) if directions is not None else len(columns)
    steps = np.array([[eps] * count, [-eps] * count])
    both = perturbed_outputs(ev, in_idx, steps, f"computing finite differences for input "
                             f"{in_idx}", columns, directions=directions)
    return _central(ev.problem, both, eps)


def _central(p, both: dict, eps: float) -> dict:
    token = quiet()   # inf - inf: a NaN the report names
    try:
        return {o: ((both[o][0] - both[o][1]) / (2 * eps)).T for o in p.float_out}
    finally:
        restore(token)


def central_every_input(ev: Evaluator, eps: float) -> dict:
    """``central_columns`` of every coordinate of every input, by input: the
    points of all inputs evaluated together where the evaluator can
    (``Evaluator.outputs_at_each``), the point check's beside them
    (``core.beside``), kept for it."""
    p = ev.problem
    riders = {i: beside.riders(ev, i) for i in p.diff_in}
    each = {i: f"computing finite differences for input {i}" for i in p.diff_in}
    try:
        found = _central_points(ev, eps, riders, each)
    except GradcheckError:
        if not any(r is not None for r in riders.values()):
            raise
        # (a point beside may be what raised, which the point check tolerates)
        found = _central_points(ev, eps, dict.fromkeys(riders), each)
    result = {}
    for i, (both, rows) in found.items():
        if rows is not None:
            beside.keep(ev, i, rows)
        result[i] = _central(p, both, eps)
    return result


def _central_points(ev: Evaluator, eps: float, riders: dict, each: dict) -> dict:
    """By input: the outputs at its central-difference points (``by_step``'s) and
    at its ``riders`` (real rows; ``None`` without)."""
    p = ev.problem
    points, shapes = {}, {}
    for i in p.diff_in:
        n = p.layout.in_size(i)
        steps = np.array([[eps] * n, [-eps] * n])
        points[i], shapes[i] = perturbed_points(p, i, steps, np.arange(n), None, riders[i])
    outs = ev.outputs_at_each(points, each)
    found = {}
    for i in points:
        made = by_step(p, outs[i], shapes[i], riders[i] is not None)
        found[i] = made if riders[i] is not None else (made, None)
    return found


def column_chunk(ev: Evaluator, copies: int = budgets.COMPARISON_COPIES) -> int:
    """Columns of every block built at once: their perturbed inputs and outputs
    (``copies`` of each) within the budget."""
    p = ev.problem
    size = sum(p.layout.in_size(i) for i in p.diff_in)
    size += sum(p.layout.out_size(o) for o in p.float_out)
    return budgets.chunk_columns(ev.budget, size, copies)


def central_blocks(ev: Evaluator, eps: float) -> Jacobian:
    """Central differences at step ``eps`` for every float output."""
    p = ev.problem
    start, before = time.perf_counter(), p.counts["function"]
    jac = Jacobian("numerical", p.layout)
    chunk = column_chunk(ev)
    if all(p.layout.in_size(i) <= chunk for i in p.diff_in):   # each input in one chunk
        for in_idx, blocks in central_every_input(ev, eps).items():
            for o, block in blocks.items():
                jac.blocks[o, in_idx] = block
    else:
        _chunked(ev, eps, jac, chunk)
    jac.counts = {"function": p.counts["function"] - before}
    jac.seconds = time.perf_counter() - start
    return jac


def _chunked(ev: Evaluator, eps: float, jac: Jacobian, chunk: int) -> None:
    """``central_blocks`` of inputs beyond one chunk: ``chunk`` columns at a time."""
    p = ev.problem
    for in_idx in p.diff_in:
        n_in = p.layout.in_size(in_idx)
        for o in p.float_out:
            jac.blocks[o, in_idx] = np.empty((n_in, p.layout.out_size(o))).T  # as a batch is made
        for a, b in budgets.chunks(n_in, chunk):
            for o, block in central_columns(ev, in_idx, eps, np.arange(a, b)).items():
                jac.blocks[o, in_idx][:, a:b] = block
