"""``refengine.vmap``: run a function over a batch dimension in one call."""
from __future__ import annotations

import functools

from ..tensor import Tensor
from .batched import BatchedTensor
from .runtime import exit_level, new_level


def vmap(func, in_dims=0, out_dims=0, randomness: str = "error", *, chunk_size=None):
    """Vectorize ``func`` over a dimension of its inputs (PyTorch's ``torch.vmap``).

    ``in_dims`` says, per positional argument, which dimension is the batch
    (``None``: not batched); an int applies to every argument. ``func`` sees
    each example without the batch dimension, and the outputs get the batch
    dimension at ``out_dims``. Every op has a batching rule, so the batch runs
    as one computation; an op without one (say a user's code that reads
    values with ``.item()``) runs once per example.

    >>> x = refengine.randn(5, 3)
    >>> refengine.vmap(lambda row: row.dot(row))(x).shape     # 5 dot products
    refengine.Size([5])

    ``randomness`` and ``chunk_size`` are accepted for PyTorch's signature;
    random ops give one draw shared by the batch.
    """
    if randomness not in ("error", "different", "same"):
        raise ValueError(f"Only allowed values for randomness are 'error', 'different', or "
                         f"'same'. Got {randomness!r}")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        dims = _per_argument(in_dims, args, "in_dims")
        size = _batch_size(args, dims)
        level = new_level()
        try:
            batched = [_wrap(a, d, level) for a, d in zip(args, dims)]
            result = func(*batched, **kwargs)
            return _unwrap_tree(result, out_dims, level, size)
        finally:
            exit_level()
    return wrapped


def _per_argument(in_dims, args, what: str) -> list:
    if isinstance(in_dims, (int, type(None))):
        return [in_dims] * len(args)
    if not isinstance(in_dims, (tuple, list)) or len(in_dims) != len(args):
        raise ValueError(f"vmap: {what} is not compatible with the structure of inputs: "
                         f"expected an int, None, or a tuple of {len(args)} entries, got "
                         f"{in_dims!r}")
    return list(in_dims)


def _leaves(value, dim):
    if isinstance(value, Tensor) and dim is not None:
        yield value, dim
    elif isinstance(value, (list, tuple)):
        dims = _per_argument(dim, value, "in_dims")
        for v, d in zip(value, dims):
            yield from _leaves(v, d)


def _batch_size(args, dims) -> int:
    sizes = set()
    for value, dim in (leaf for a, d in zip(args, dims) for leaf in _leaves(a, d)):
        if not -value.ndim <= dim < value.ndim:
            raise ValueError(f"vmap: in_dim={dim} is out of bounds for a tensor of "
                             f"{value.ndim} dimensions")
        sizes.add(value.shape[dim])
    if not sizes:
        raise ValueError("vmap: at least one input must be a tensor with a batch dimension "
                         "(in_dims is None for every tensor); there is nothing to map over")
    if len(sizes) > 1:
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sorted(sizes)} for the mapped dimension")
    return sizes.pop()


def _wrap(value, dim, level):
    if isinstance(value, (list, tuple)):
        dims = _per_argument(dim, value, "in_dims")
        return type(value)(_wrap(v, d, level) for v, d in zip(value, dims))
    if not isinstance(value, Tensor) or dim is None:
        return value
    if dim % value.ndim != 0:
        value = value.movedim(dim, 0)
    return BatchedTensor(value, level)


def _unwrap_tree(result, out_dims, level, size):
    if isinstance(result, (tuple, list)):
        dims = _per_argument(out_dims, result, "out_dims")
        items = [_unwrap_tree(r, d, level, size) for r, d in zip(result, dims)]
        if hasattr(result, "_fields"):     # a named tuple (max's values, indices)
            return type(result)(*items)
        return type(result)(items)
    if not isinstance(result, Tensor):
        raise ValueError(f"vmap: the function must return tensors (or tuples of them), "
                         f"got {type(result).__name__}")
    return unwrap(result, level, size, out_dims)


def unwrap(value: Tensor, level: int, size: int, out_dim: int = 0) -> Tensor:
    """The physical tensor of ``value`` at ``level``, batch at ``out_dim``.

    A tensor that is not batched at ``level`` (it did not depend on the
    batched inputs) is expanded along a new batch dimension, as in PyTorch.
    """
    if isinstance(value, BatchedTensor) and value._level == level:
        physical = value._value
    else:
        physical = value.unsqueeze(0).expand(size, *value.shape)
    if out_dim is None:
        raise ValueError("vmap: out_dims=None is only valid for outputs that are not batched")
    if out_dim % physical.ndim != 0:
        physical = physical.movedim(0, out_dim)
    return physical
