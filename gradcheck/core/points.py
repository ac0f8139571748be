"""Points of several inputs in one vmapped call: a first derivative's differences.

The finite differences of a check move one input at a time, and each input's
points are one vmapped evaluation (``Evaluator.outputs_at``). A function that
differentiates inside (a first derivative, ``gradcheck.core.secondorder``) is
vmapped with every input batched anyway (each example needs its own copy of
every input, or the gradients of the examples would be summed), so the points
of all its inputs can be one call: example ``k`` is the given inputs with one
of them moved, as it would be in that input's own call. On refengine that
call costs 0.2 ms before its first example, two thirds of a small first
derivative's differences. Each example is the same evaluation at the same
point as before; only which examples share the batch differs.

``mapped_points`` makes that call; ``Evaluator.outputs_at_each`` decides
when it applies and falls back to one call per input. ``mapped_input`` is
the batch of one input's points (``Evaluator.outputs_at``). Imports only
``gradcheck.core``'s problem.
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.core.problem import Problem, as_tuple


def mapped_points(p: Problem, points: dict) -> dict | None:
    """By input index of ``points`` (arrays of points of that input, stacked),
    the outputs at each point (by ``out_idx``, stacked), from one vmapped call
    with every tensor input batched; ``None`` where the engine cannot (no vmap,
    a function it cannot map through autograd, an input laid out unlike a
    new tensor)."""
    E = p.engine
    if not E.vmap_differentiates or not all(E.plain_layout(p.inputs[i]) for i in p.arrays):
        return None
    spans, total = {}, 0
    for i, arrays in points.items():
        spans[i] = (total, total + len(arrays))
        total += len(arrays)
    with E.enable_grad():
        args = p.fresh_inputs({})
        dims = [None] * len(args)
        firsts = {}
        for i, base in p.arrays.items():
            full = np.empty((total, *base.shape), base.dtype)
            full[...] = base
            if i in points:
                a, b = spans[i]
                full[a:b] = points[i]
            # (the mutation check compares example 0 with a copy of it)
            firsts[i] = np.array(full[0])
            args[i] = p.like_input(i, full, i in p.diff_in, copy=False)
            dims[i] = 0
        found = call_mapped(p, args, dims, firsts, total)
    if found is None:
        return None
    return {i: {o: values[a:b] for o, values in found.items()} for i, (a, b) in spans.items()}


def mapped_input(p: Problem, in_idx: int, arrays: np.ndarray, grad: bool) -> dict | None:
    """The outputs (by ``out_idx``, stacked) for each ``arrays[k]`` in place of
    input ``in_idx``, in one vmapped call made in the grad mode
    ``Problem.for_values`` set (``Evaluator.outputs_at``'s batch); ``grad``: every
    input batched, each example's leaves its own and requiring grad. ``None``:
    the engine cannot map it."""
    E = p.engine
    # a batch is a new tensor: an input whose storage layout the function
    # reads (as_strided on a view with an offset) is evaluated one at a time
    if not all(E.plain_layout(p.inputs[i]) for i in (p.arrays if grad else [in_idx])):
        return None
    args = p.fresh_inputs({}, grad)
    dims = [None] * len(args)
    # (the stack is shared, not copied: a batch's copy costs as much as its
    # evaluation; the mutation check then compares with a copy of example 0)
    first = np.array(arrays[0])
    args[in_idx] = p.like_input(in_idx, arrays, grad and in_idx in p.diff_in, copy=False)
    dims[in_idx] = 0
    if grad:
        # the function may differentiate inside: each example needs its
        # own copy of every input, or their gradients would be summed
        for i, a in p.arrays.items():
            if i != in_idx:
                args[i] = p.like_input(i, np.broadcast_to(a, (len(arrays), *a.shape)),
                                       i in p.diff_in)
                dims[i] = 0
    return call_mapped(p, args, dims, {**p.arrays, in_idx: first}, len(arrays))


def call_mapped(p: Problem, args: list, dims: list, firsts: dict, count: int) -> dict | None:
    """``p.func`` vmapped over ``dims`` (0 for a batched argument) on ``args``:
    its floating outputs by index, stacked over the ``count`` examples; the
    inputs checked unchanged, example 0 of each batched one against ``firsts``
    (an in-place write changes every example). ``None``: the engine cannot map it."""
    E = p.engine
    # (only values are read: a first derivative's without the graph of them)
    mapped = E.vmap(p.values_func or p.func, tuple(dims))
    if mapped is None:
        return None
    outs = as_tuple(mapped(*args))
    p.check_unchanged([a if d is None else E.to_numpy(a, copy=False)[0]
                       for a, d in zip(args, dims)], firsts,
                      p.subject, f"evaluating it at {count} points at once")
    return {o: E.to_numpy(outs[o], copy=False)   # (new: nothing else holds them)
            for o in p.float_out}
