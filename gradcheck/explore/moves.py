"""A screen's moved points in one vmapped call, where the engine can.

A quick screen (``quick``) evaluates the function at ``x + s u`` for two
steps ``s`` (the one-sided quotients), and for two more where it needs the
quotients at half the step. Each is one call of the function, and on
refengine a call's dispatch costs as much as some hundred examples of a
vmapped one: the steps of one screen are evaluated together, example ``k``
the point moved by ``steps[k]``, built with the same NumPy arithmetic as
the call of its own would be (``quick.Point.moved``), its values read
without their graph as there (``without_graph``).

Only for a function that differentiates inside (a second-order check's
first derivative, ``needs_grad``): refengine's vmap costs more per op than
a plain call does (callgrind, per screen of two steps: ``sin`` 187 k
instructions one by one, 220 k batched; a chain of five ops 657 k, 762 k),
but less than a call that builds and walks a graph per example (the first
derivative of ``sin`` 730 k, 682 k; of ``matmul`` 1153 k, 1008 k). And only
on the engines of ``BATCHED_ENGINES``, whose batching rules run
the same NumPy kernels over a leading dimension: an example's values are
its call's, but for a product's backward, whose batched matrix products
may sum in another order (the sweep's screens logged both ways: 29 of 5,371
differ, in the last digits of the first derivatives of dot, vdot, mv,
matmul, outer and einsum; no screen's word moved). Elsewhere (torch's
batched kernels round otherwise: its vmap of a matrix product is a batched one),
where batching is off, where an input is laid out unlike a new tensor, and
wherever the batch raises (a step outside the domain, an op that refuses to
be mapped), ``moved_at`` returns ``None`` and the screen makes its calls one
by one as before, which then say which step raises.
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.core.batching import batching_enabled
from adcheck.gradcheck.core.coords import to_real
from adcheck.gradcheck.core.problem import as_tuple

#: the engines whose vmapped examples are computed as their own calls are
BATCHED_ENGINES = frozenset({"refengine"})


def moved_at(point, u: dict, steps: tuple) -> list | None:
    """The outputs of ``point`` (a ``quick.Point``) moved by each of ``steps``
    along ``u``, as ``point.moved`` gives them, from one vmapped call; ``None``
    where that call is not made or raises (the caller then calls one by one)."""
    E = point.E
    if not point.needs_grad or E.name not in BATCHED_ENGINES or len(steps) < 2 \
            or not E.vmap_differentiates or not batching_enabled():
        return None
    args = _batch(point, u, steps)
    if args is None:
        return None
    func = getattr(point.func, "without_graph", point.func)
    try:
        with E.enable_grad():
            mapped = E.vmap(func, (0,) * len(args))
            if mapped is None:
                return None
            outs = as_tuple(mapped(*args))
            stacked = {k: E.to_numpy(outs[k]) for k in point.outs}
    except Exception:    # noqa: BLE001 - the calls one by one say where and why
        return None
    if any(a.shape[:1] != (len(steps),) for a in stacked.values()):
        return None
    return [{k: to_real(a[j]) for k, a in stacked.items()} for j in range(len(steps))]


def _batch(point, u: dict, steps: tuple) -> list | None:
    """The vmapped call's arguments, every one stacked by step (the function
    differentiates inside: each example needs its own copy of every input, or
    the gradients of the examples would be summed); ``None`` where an input is
    no tensor or is laid out unlike a new one (a function reading storage
    would see another input)."""
    E, ins = point.E, point.ins
    if not all(E.is_tensor(x) and E.plain_layout(x) for x in ins):
        return None
    args = []
    for i, x in enumerate(ins):
        if i in u:
            # (each example as ``moved`` computes it, then stacked: the same bits)
            stack = np.stack([point.moved_array(i, u[i], step) for step in steps])
        else:
            a = E.to_numpy(x)
            stack = np.array(np.broadcast_to(a, (len(steps), *a.shape)))
        # (a new stack, read by nothing else: shared, not copied)
        args.append(E.from_numpy(stack, requires_grad=E.requires_grad(x), dtype=x.dtype,
                                 copy=False))
    return args
