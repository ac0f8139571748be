"""The forward cells of every nearby point in one batched call per input.

``gradcheck.large.lowprobed.measured_cells`` takes ``A S`` (the first
derivative's jvps along the probe directions) at ``point_count`` points next
to the sample, in the formula's dtype and in float64: one vmapped jvp call
per point, precision and input, which in torch's legacy vmap costs its
overhead far more than its arithmetic (an op_db sweep's largest single cost,
``bench/opdb_profile.md``). Here the points of one precision become one
problem: each input that requires grad is the stack of its values at the
points (a leading dimension), and the function runs the original one on
each slice (a copy of it, so that no op sees a view into the stack) and
returns every point's outputs in turn. A tangent ``S`` on a stacked input,
repeated for every point, moves every point's copy along ``S`` at once, and
the outputs of point ``p`` depend on point ``p``'s slice only, so the
stacked problem's blocks are exactly each point's ``A S``, computed by the
same ops on the same values, from one call per input instead of one per
point.
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.problem import Problem, as_tuple
from adcheck.gradcheck.large.cells import seeded_forward
from adcheck.gradcheck.large.seeds import Probes


def stacked_forward(points: list, seeds) -> list | None:
    """``[blocks]``: the forward cells ``A S`` of each of ``points`` (problems
    of one function and precision at other values of the same inputs), by
    ``(out_idx, in_idx)`` as ``seeded_forward`` makes them for each; ``None``
    when they cannot be stacked (another engine than torch, outputs that
    differ between points): the caller then evaluates each point on its own.
    ``seeds``: the directions by input, of every point, or a list of them,
    one per point."""
    first = points[0]
    if first.engine.name != "torch" or len(points) < 2:
        return None
    if any(q.float_out != first.float_out or q.diff_in != first.diff_in
           or len(q.outputs) != len(first.outputs) for q in points):
        return None
    stacked = _stacked_problem(points)
    m = len(first.outputs)
    if any(stacked.float_out[p * len(first.float_out) + j] != p * m + o
           for p in range(len(points)) for j, o in enumerate(first.float_out)):
        return None
    each = seeds if isinstance(seeds, list) else [seeds] * len(points)
    # (the stacked input's real coordinates are point after point)
    tiled = {i: Probes(np.concatenate([own[i].vectors for own in each], axis=1))
             for i in each[0]}
    jac = seeded_forward(Evaluator(stacked), tiled, "probed", "")
    return [{(o, i): jac.blocks[p * m + o, i] for o in first.float_out for i in first.diff_in}
            for p in range(len(points))]


def _stacked_problem(points: list) -> Problem:
    """One problem of every point: each input that requires grad stacked along a
    new first dimension, the others as the first point has them."""
    first = points[0]
    count = len(points)
    inputs = list(first.inputs)
    for i in first.diff_in:
        inputs[i] = first.like_input(i, np.stack([q.arrays[i] for q in points]),
                                     requires_grad=True)
    source = first.source
    diff_in = first.diff_in

    def every_point(*args):
        outputs = []
        for p in range(count):
            ins = list(args)
            for i in diff_in:
                # (a copy: an op that reads its input's storage must not see the stack)
                ins[i] = args[i][p].clone()
            outputs.extend(as_tuple(source(*ins)))
        return tuple(outputs)

    return Problem(every_point, inputs, first.name, order=first.order, warn_precision=False,
                   measure=False)
