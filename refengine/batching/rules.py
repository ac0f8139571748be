"""Batching rules shared by many ops, and the helpers op-specific rules use.

A rule takes a ``BatchCall`` (``refengine/batching/runtime.py``) and returns the
physical result with the batch at dimension 0. The rules here are named after
the structure they exploit:

- ``elementwise``: broadcasting ops; a batched argument gets size-1 dimensions
  after its batch dimension so that NumPy's right-aligned broadcasting lines
  the logical dimensions up;
- ``over_dims(...)``: ops with dimension arguments; each logical dimension is
  shifted past the batch dimension;
- ``trailing``: ops on the trailing dimensions that accept any leading batch
  dimensions (linear algebra on ``(..., n, n)``), given the ranks line up.

A rule raises ``NotBatchable`` for a case it does not handle; the op then
runs once per batch element.
"""
from __future__ import annotations

from .batched import NotBatchable


def _tensor_names(call) -> list:
    from ..tensor import Tensor
    return [n for n, v in call.env.items() if isinstance(v, Tensor)]


def pad_batched(call, names=None, rank: int | None = None) -> dict:
    """Size-1 dims after the batch dim, so each batched argument has ``rank``
    logical dims (default: the largest among ``names``)."""
    names = _tensor_names(call) if names is None else names
    if rank is None:
        rank = max((call.rank(n) for n in names), default=0)
    changes = {}
    for n in names:
        if n in call.batched and call.rank(n) < rank:
            v = call.env[n]
            changes[n] = v.reshape(v.shape[0], *([1] * (rank - call.rank(n))), *v.shape[1:])
    return changes


def elementwise(call):
    """Broadcasting ops (``exp``, ``add``, ``where``, ``clamp``...)."""
    if call.items:
        raise NotBatchable("list arguments are not elementwise")
    return call.run(**pad_batched(call))


def shift_dim(d: int, rank: int) -> int:
    """Logical dimension ``d`` (of a ``rank``-dim tensor) in the physical tensor."""
    if rank == 0:
        # dim 0 / -1 of a 0-d tensor means the tensor itself; the physical
        # tensor has no such dimension to name
        raise NotBatchable("a dimension of a 0-d tensor")
    if not -rank <= d < rank:
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-rank}, {rank - 1}], but got {d})")
    return d % rank + 1


def shift_dims(dims, rank: int, none_means_all: bool = False):
    """``shift_dim`` for an int, a sequence of ints, or ``None``."""
    if dims is None:
        if not none_means_all:
            return None
        if rank == 0:
            raise NotBatchable("a reduction of a 0-d tensor")
        return tuple(range(1, rank + 1))
    if isinstance(dims, int):
        return shift_dim(dims, rank)
    if len(dims) == 0:
        raise NotBatchable("an empty dimension list")
    return type(dims)(shift_dim(d, rank) for d in dims)


def over_dims(*names: str, reduce_all: bool = False, arg: str = "self", extra: int = 0):
    """A rule for an op whose ``names`` arguments are dimensions of ``arg``,
    when ``arg`` is its only batched argument.

    ``reduce_all``: ``None`` means every dimension (reductions).
    ``extra``: the dimension may also be ``rank`` (``unsqueeze``).
    """
    def rule(call):
        if call.batched != {arg} or call.items:
            raise NotBatchable(f"arguments other than {arg} are batched")
        rank = call.rank(arg) + extra
        changes = {}
        for n in names:
            if call.env[n] is not None or reduce_all:
                changes[n] = shift_dims(call.env[n], rank, reduce_all)
        return call.run(**changes)
    return rule


def trailing(call):
    """Ops on the trailing dims that accept leading batch dims (``det``, ``qr``...)."""
    if call.items:
        raise NotBatchable("list arguments")
    return call.run(**pad_batched(call))


def materialize_all(call, names) -> dict:
    """Every argument in ``names`` with a batch dimension (expanded if unbatched)."""
    return {n: call.materialize(n) for n in names if call.env.get(n) is not None}


def matrices(call):
    """``trailing`` for ops on matrices (``det``, ``inv``, ``qr``, ``tril``).

    A batched argument with fewer than two dims per example would have its
    batch dim taken for a matrix dim; it goes to the loop, which raises the
    op's own error.
    """
    if any(call.rank(n) < 2 for n in call.batched):
        raise NotBatchable("an argument is not a matrix")
    return trailing(call)


def pad_to(value, rank: int):
    """A physical ``value`` (batch at dim 0) with size-1 dims after the batch
    dim, up to ``rank`` logical dims."""
    missing = rank - (value.ndim - 1)
    if missing <= 0:
        return value
    return value.reshape(value.shape[0], *([1] * missing), *value.shape[1:])


def expand_batch(value, size: int):
    """An unbatched ``value`` with a batch dim of ``size`` (a broadcast view)."""
    return value.unsqueeze(0).expand(size, *value.shape)


def materialize_items(call, name: str) -> list:
    """List argument ``name`` (``cat``'s tensors) with every item batched."""
    flags = call.items.get(name, [False] * len(call.env[name]))
    return [v if f else expand_batch(v, call.size) for v, f in zip(call.env[name], flags)]


def item_rank(call, name: str, i: int = 0) -> int:
    """The logical number of dims of item ``i`` of list argument ``name``."""
    value = call.env[name][i]
    batched = call.items.get(name, [False] * len(call.env[name]))[i]
    return value.ndim - 1 if batched else value.ndim
