"""Tensors a custom Function keeps from its forward that its double backward
takes for constants.

A custom Function's forward runs without recording, so a tensor it computes
there from its inputs (``mean``, ``rstd`` of a hand-written layer norm) and
keeps for the backward (``ctx.save_for_backward(mean, rstd)``, or
``ctx.rstd = rstd``) reaches the backward with no history. The first
derivative is right; its derivative through that tensor is missing, since
to autograd the tensor is a constant though it changes with the inputs. A
second-order check then fails with the missing part, which reads like a
wrong formula (or "analytical is zero" where the whole dependence went
through such a tensor). PyTorch's note on double backward with custom
Functions gives the ways out: keep inputs or outputs only, return the
intermediate as an output of the Function, or recompute it in the backward.

Found by running the function, not by reading it: twice at the check's
inputs and once at inputs moved a little. A kept floating tensor without
history that is the same in the first two runs and differs in the third is
such an intermediate (most of its entries not zero must differ: a mask of
``x > 0`` changes only where a move crossed 0, and rightly has no derivative); a
constant (a weight that requires no grad) does not change, and a random draw
(a dropout mask) changes between the first two.
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.core.problem import as_tuple

#: the relative size of the move, per coordinate (of at least 1 in magnitude):
#: large enough that every intermediate of double precision changes, small
#: enough to stay in most functions' domain
MOVE = 1e-3


def constant_saves(E, func, inputs) -> list:
    """``[(node name, [(what, shape), ...]), ...]``: per custom Function of the
    graph of ``func(*inputs)``, what it keeps that changes with the inputs but
    carries no history (see the module's docstring). Empty where none does,
    the engine has no graph, or the runs do not line up."""
    try:
        first, again = _kept(E, func, inputs), _kept(E, func, inputs)
        moved = _kept(E, func, _moved(E, inputs))
    except Exception:  # noqa: BLE001 - a run that fails here finds nothing
        return []
    if not first or [n for n, _ in first] != [n for n, _ in moved] or \
            [n for n, _ in first] != [n for n, _ in again]:
        return []
    found = []
    for (name, kept), (_, same), (_, other) in zip(first, again, moved):
        changed = [(what, a.shape) for (what, a), (_, b), (_, c) in zip(kept, same, other)
                   if a is not None and b is not None and c is not None and
                   a.shape == b.shape == c.shape and np.array_equal(a, b, equal_nan=True) and
                   _changed(a, c)]
        if changed:
            found.append((name, changed))
    return found


def _changed(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether most entries of ``b`` that are not zero in both differ from
    ``a``'s: a smooth intermediate changes nearly everywhere the inputs moved
    (``relu(x - 1)`` wherever it is not zero, however few those entries are);
    a mask of ``x > 0`` changes only where a move crossed 0, and its
    derivative is zero, as autograd takes it."""
    with np.errstate(invalid="ignore"):
        both_nan = np.isnan(a) & np.isnan(b)
        differ = np.count_nonzero((a != b) & ~both_nan)
        support = np.count_nonzero(((a != 0) | (b != 0)) & ~both_nan)
    return support > 0 and 2 * differ >= support


def describe(found: list) -> str:
    """The diagnosis of a second-order failure for ``constant_saves``' findings."""
    parts = []
    for name, kept in found:
        listed = ", ".join(f"{what} of shape {tuple(shape)}" for what, shape in kept)
        many = len(kept) > 1
        parts.append(f"{name} keeps {len(kept)} tensor{'s' if many else ''} from its forward "
                     f"that change{'' if many else 's'} with the inputs but carr"
                     f"{'y' if many else 'ies'} no history ({listed})")
    return ("; ".join(parts) + ": a custom Function's forward runs without recording, so its "
            "double backward takes such a tensor for a constant and misses its derivative. "
            "Keep only inputs or outputs with save_for_backward, return such a tensor as an "
            "output of the Function, or recompute it in backward from the saved inputs")


def _moved(E, inputs) -> tuple:
    """``inputs`` with every floating tensor that requires grad moved by up to
    ``MOVE`` of each coordinate (of at least 1), at random with a fixed seed."""
    rng = np.random.default_rng(0)
    moved = []
    for x in inputs:
        if E.is_tensor(x) and E.requires_grad(x) and E.is_differentiable_dtype(x):
            a = E.to_numpy(x)
            step = MOVE * rng.uniform(0.5, 1.0, a.shape) * np.maximum(np.abs(a), 1.0)
            if np.iscomplexobj(a):
                step = step * np.exp(2j * np.pi * rng.uniform(0, 1, a.shape))
            x = E.from_numpy_like((a + step).astype(a.dtype), x, requires_grad=True)
        moved.append(x)
    return tuple(moved)


def _kept(E, func, inputs) -> list:
    """Per custom Function node of the graph of ``func(*inputs)`` (breadth
    first from the outputs, edges in order): its name and what it keeps, each
    ``(what, array)`` where it is a floating tensor without history, else
    ``(what, None)``."""
    kind = getattr(getattr(getattr(E.module, "autograd", None), "function", None),
                   "BackwardCFunction", None)
    if kind is None:
        return []
    with E.enable_grad():
        outs = as_tuple(func(*inputs))
    queue = [getattr(o, "grad_fn", None) for o in outs if E.is_tensor(o)]
    seen, found = set(), []
    while queue:
        node = queue.pop(0)
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, kind):
            found.append((node.name(), _node_keeps(E, node)))
        queue.extend(child for child, _ in node.next_functions)
    return found


def _node_keeps(E, node) -> list:
    """What a custom Function node keeps: its saved tensors, then the tensors
    set as attributes of its ctx."""
    kept = [(f"ctx.saved_tensors[{k}]", t) for k, t in enumerate(node.saved_tensors)]
    kept += [(f"ctx.{name}", t) for name, t in vars(node).items()
             if not name.startswith("_") and E.is_tensor(t)]
    return [(what, E.to_numpy(t) if E.is_tensor(t) and _no_history(E, t) and
             E.is_differentiable_dtype(t) else None) for what, t in kept]


def _no_history(E, t) -> bool:
    """Whether a double backward takes ``t`` for a constant: it does not require
    grad, or it is a view of an input made in the forward (``a.expand(...)``,
    ``a[0]``): that requires grad, yet has no grad_fn, and torch takes it for a
    leaf of its own whose gradient never reaches the input."""
    if not E.requires_grad(t):
        return True
    return getattr(t, "grad_fn", True) is None and getattr(t, "_base", None) is not None
