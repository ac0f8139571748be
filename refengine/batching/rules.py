"""Batching rules shared by many ops, and the helpers op-specific rules use.

A rule takes a ``BatchCall`` (``refengine/batching/runtime.py``) and returns the
physical result with the batch at dimension 0. The rules here are named after
the structure they exploit:

- ``elementwise``: broadcasting ops; a batched argument gets size-1 dimensions
  after its batch dimension so that NumPy's right-aligned broadcasting lines
  the logical dimensions up;
- ``over_dims(...)``: ops with dimension arguments; each logical dimension is
  shifted past the batch dimension;
- ``reduction(...)``: reductions over ``dim`` with ``keepdim``, where
  ``None`` means every dimension of the example;
- ``along_dim(...)``: ops that map each slice along one dim to a slice of
  the same shape (``cumsum``, ``softmax``);
- ``trailing``: ops on the trailing dimensions that accept any leading batch
  dimensions, given the ranks line up; ``matrices`` for those on matrices
  (linear algebra on ``(..., n, n)``).

Helpers for op-specific rules: ``pad_batched`` / ``pad_to`` (size-1 dims
after the batch dim), ``shift_dim(s)``, ``expand_batch`` /
``materialize_items`` (give an unbatched argument the batch),
``item_rank`` and ``logical_shape``.

A rule raises ``NotBatchable`` for a case it does not handle; the op then
runs once per batch element.
"""
from __future__ import annotations

import math

from .. import dtypes
from ..tensor import Tensor
from .batched import NotBatchable


def pad_batched(call, names=None, rank: int | None = None) -> dict:
    """Size-1 dims after the batch dim, so each batched argument has ``rank``
    logical dims (default: the largest among ``names``)."""
    # each rank read once: this runs for every elementwise op under vmap (a batched
    # backward's products); plain loops, not comprehensions (each a frame of its own)
    env, batched = call.env, call.batched   # (``call.rank`` inlined: a call per name)
    ranks, top = {}, 0
    for n in (env if names is None else names):
        value = env[n]
        if names is None and not isinstance(value, Tensor):
            continue
        if n in batched:
            r = ranks[n] = value.ndim - 1
        elif rank is None:
            r = value.ndim
        else:
            continue
        if r > top:
            top = r
    rank = top if rank is None else rank
    changes = {}
    for n, r in ranks.items():
        if r < rank:
            changes[n] = pad_to(env[n], rank)
    return changes


def elementwise(call):
    """Broadcasting ops (``exp``, ``add``, ``where``, ``clamp``...)."""
    if call.items:
        raise NotBatchable("list arguments are not elementwise")
    changes = pad_batched(call)
    # (only a 0-d example, a batch of one dim, promotes otherwise; a loop, not
    # any() over a generator: a frame less on every elementwise op under vmap)
    env = call.env
    for n in call.batched:
        if env[n].ndim == 1:
            for name, dtype in _example_promotion(call).items():
                changes[name] = changes.get(name, env[name]).to(dtype)
            break
    return call.run(**changes)


class _Operand:
    """What type promotion reads of a tensor: its dtype, rank and number-ness."""

    def __init__(self, value, ndim):
        self.dtype, self.ndim, self._wrapped_number = value.dtype, ndim, value._wrapped_number


def _example_promotion(call) -> dict:
    """Casts that keep each example's result dtype.

    A 0-d example promotes more weakly than a dimensioned tensor (float32
    tensor * float64 0-d tensor is float32), but its batch is dimensioned:
    a batched 0-d argument is cast to the example's result dtype first.
    """
    names = [n for n in (call.op.promote or ()) if isinstance(call.env.get(n), Tensor)]
    zero_d = [n for n in names if n in call.batched and call.rank(n) == 0]
    if not zero_d or len(names) < 2:
        return {}
    example = dtypes.result_type(*(_Operand(call.env[n], call.rank(n)) for n in names))
    batch = dtypes.result_type(*(call.env[n] for n in names))
    if example is batch:
        return {}
    return {n: example for n in zero_d if call.env[n].dtype is not example}


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


def _one_dim(dims) -> bool:
    """Whether a dim argument names a single dim (an int) rather than a list."""
    return hasattr(dims, "__index__")


def _only_self(call) -> None:
    if call.batched != {"self"} or call.items:
        raise NotBatchable("arguments other than self are batched")


def reduction(dim: str = "dim", int_dim: bool = False):
    """A rule for a reduction of ``self`` over its ``dim`` argument, with
    ``keepdim`` (``sum``, ``amax``, ``var``, ``vector_norm``...), when ``self``
    is its only batched argument.

    ``None`` and an empty list mean every dim, as in the forwards. A 0-d
    example reduces a size-1 dim put after the batch dim (its result is 0-d,
    ``keepdim`` or not). ``int_dim``: the op takes one int dim (``prod``), so
    "every dim" reduces the example flattened to one dim.
    """
    def rule(call):
        _only_self(call)
        x, rank, dims = call.env["self"], call.rank("self"), call.env[dim]
        every = dims is None or (not _one_dim(dims) and len(dims) == 0)
        no_keepdim = {"keepdim": False} if "keepdim" in call.env else {}
        if rank == 0:
            if not every and any(d not in (-1, 0) for d in ((dims,) if _one_dim(dims) else dims)):
                # what a 0-d tensor does with such a dim is the op's own business
                raise NotBatchable("a dim beyond the dims of a 0-d tensor")
            one = 1 if int_dim or _one_dim(dims) else (1,)
            return call.run(self=x.unsqueeze(1), **{dim: one}, **no_keepdim)
        if every and int_dim:
            flat = x.reshape(call.size, math.prod(x.shape[1:]))
            out = call.run(self=flat, **{dim: 1}, **no_keepdim)
            return out.reshape(call.size, *[1] * rank) if call.env.get("keepdim") else out
        return call.run(**{dim: shift_dims(tuple(range(rank)) if every else dims, rank)})
    return rule


def along_dim(dim: str = "dim"):
    """A rule for an op mapping each slice of ``self`` along one dim to a slice
    of the same shape (``cumsum``, ``softmax``), when ``self`` is its only
    batched argument. A 0-d example is a slice of one element."""
    def rule(call):
        _only_self(call)
        x, rank, d = call.env["self"], call.rank("self"), call.env[dim]
        if rank == 0:
            if d not in (-1, 0):
                raise NotBatchable("a dim beyond the dims of a 0-d tensor")
            # in place, this writes through the unsqueezed view into x
            return call.run(self=x.unsqueeze(1), **{dim: 1}).squeeze(1)
        return call.run(**{dim: shift_dim(d, rank)})
    return rule


def logical_shape(call, name: str) -> tuple:
    """The per-example shape of tensor argument ``name``."""
    shape = tuple(call.env[name].shape)
    return shape[1:] if name in call.batched else shape
