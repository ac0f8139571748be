"""The numerical Jacobian: central differences, one column per coordinate."""
from __future__ import annotations

import time

import numpy as np

from gradcheck import coords
from gradcheck.evaluation import Evaluator
from gradcheck.jacobian import Jacobian


def perturbed_outputs(ev: Evaluator, in_idx: int, steps: np.ndarray, what: str,
                      columns=None, tolerant: bool = False) -> dict:
    """The outputs with coordinate ``columns[j]`` of input ``in_idx`` moved by
    ``steps[k, j]`` (default: every coordinate), in real coordinates: by output,
    an array of shape ``(len(steps), len(columns), output real size)``.
    ``tolerant``: a point where the function raises gives NaN outputs."""
    p = ev.problem
    base = p.arrays[in_idx]
    vector = coords.to_real(base)
    n = vector.size
    columns = np.arange(n) if columns is None else np.asarray(columns, dtype=np.intp)
    moved = np.broadcast_to(vector, (len(steps), len(columns), n)).copy()
    moved[:, np.arange(len(columns)), columns] += steps
    arrays = coords.from_real_rows(moved.reshape(len(steps) * len(columns), n), base.shape,
                                   base.dtype)
    outs = ev.outputs_at(in_idx, arrays, what, f"computing finite differences for input {in_idx}",
                         tolerant)
    return {o: coords.to_real_rows(v).reshape(len(steps), len(columns), p.layout.out_size(o))
            for o, v in outs.items()}


def central_blocks(ev: Evaluator, eps: float) -> Jacobian:
    """Central differences at step ``eps`` for every float output."""
    p = ev.problem
    start, before = time.perf_counter(), p.counts["function"]
    jac = Jacobian("numerical", p.layout)
    for in_idx in p.diff_in:
        n_in = p.layout.in_size(in_idx)
        steps = np.array([[eps] * n_in, [-eps] * n_in])
        both = perturbed_outputs(ev, in_idx, steps,
                                 f"computing finite differences for input {in_idx}")
        with np.errstate(invalid="ignore"):  # inf - inf: a NaN the report names
            for o in p.float_out:
                jac.blocks[o, in_idx] = ((both[o][0] - both[o][1]) / (2 * eps)).T
    jac.counts = {"function": p.counts["function"] - before}
    jac.seconds = time.perf_counter() - start
    return jac
