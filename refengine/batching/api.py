"""``refengine.vmap``: run a function over a batch dimension in one call."""
from __future__ import annotations

import functools

from ..pytree import tree_flatten, tree_unflatten
from ..tensor import Tensor
from .batched import BatchedTensor
from .functions import RANDOMNESS
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
        # (checked at the call, as torch does: the same vmap object may be called
        # with other arguments; the names are the function's, for the message)
        if in_dims is None or not isinstance(in_dims, (int, tuple)):
            raise ValueError(f"vmap({_name(func)}, in_dims={in_dims!r}): in_dims must be an "
                             f"int or a tuple with an entry per positional argument (nested "
                             f"as the arguments are), got {type(in_dims).__name__}")
        if out_dims is not None and not isinstance(out_dims, (int, tuple, list)):
            raise ValueError(f"vmap({_name(func)}, out_dims={out_dims!r}): out_dims must be an "
                             f"int, None, or a tuple or list of them nested as the outputs "
                             f"are, got {type(out_dims).__name__}")
        dims = _tensor_dims(args, in_dims)
        if dims is None:
            leaves, spec = tree_flatten(args, is_leaf=_is_dict)
            dims = _dims_per_leaf(in_dims, spec, "in_dims")
        else:
            leaves, spec = args, None
        size = _batch_size(leaves, dims)
        level = new_level()
        RANDOMNESS[level] = randomness     # (what a Function's own rule is told)
        try:
            batched = [_wrap(a, d, level) for a, d in zip(leaves, dims)]
            if spec is not None:
                batched = tree_unflatten(batched, spec)
            result = func(*batched, **kwargs)
            return _unwrap_result(result, out_dims, level, size)
        finally:
            RANDOMNESS.pop(level, None)
            exit_level()
    return wrapped


def _tensor_dims(args: tuple, in_dims):
    """``in_dims`` per argument when every argument is a tensor (the usual
    call: the tree of the arguments is the tuple itself, nothing to flatten);
    None otherwise, or when ``in_dims`` does not fit (the tree's path then
    says why)."""
    for a in args:
        if not isinstance(a, Tensor):
            return None
    if isinstance(in_dims, int):
        return [in_dims] * len(args)
    if len(in_dims) == len(args) and all(d is None or isinstance(d, int) for d in in_dims):
        return list(in_dims)
    return None


def _name(func) -> str:
    return getattr(func, "__name__", None) or repr(func)


def _unwrap_result(result, out_dims, level, size):
    """``_unwrap_tree`` without the tree for a tensor or a tuple of tensors."""
    if out_dims is None or isinstance(out_dims, int):
        if isinstance(result, Tensor):
            return unwrap(result, level, size, out_dims)
        if type(result) is tuple and all(isinstance(r, Tensor) for r in result):
            return tuple(unwrap(r, level, size, out_dims) for r in result)
    return _unwrap_tree(result, out_dims, level, size)


def _is_dict(value) -> bool:
    # a dict is one unbatched value here, where torch.vmap maps its tensors
    # (docs/differences.md)
    return isinstance(value, dict)


def _dims_per_leaf(dims, spec, what: str) -> list:
    """``dims`` (an int, None, or a tuple of them per child, nested as ``spec``)
    broadcast to one entry per leaf of ``spec``. A container's entries come in
    a container of its own class (a list for a list, a named tuple for that
    named tuple), as torch.vmap matches them."""
    where = "inputs" if what == "in_dims" else "outputs"
    if spec.is_leaf():
        if dims is not None and not isinstance(dims, int):
            raise ValueError(f"vmap: {what} has {dims!r} for one of the {where}: each entry "
                             f"is an integer dimension or None")
        return [dims]
    if isinstance(dims, (int, type(None))):
        return [dims] * spec.num_leaves
    if type(dims) is not spec.type or len(dims) != len(spec.children):
        raise ValueError(f"vmap: {what} is not compatible with the structure of {where}: "
                         f"expected an int, None, or a {spec.type.__name__} of "
                         f"{len(spec.children)} entries, got {dims!r}")
    return [d for dim, child in zip(dims, spec.children)
            for d in _dims_per_leaf(dim, child, what)]


def _batch_size(leaves, dims) -> int:
    sizes = set()
    for value, dim in zip(leaves, dims):
        if not isinstance(value, Tensor) or dim is None:
            continue
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
    if not isinstance(value, Tensor) or dim is None:
        return value
    if dim % value.ndim != 0:
        value = value.movedim(dim, 0)
    return BatchedTensor(value, level)


def _unwrap_tree(result, out_dims, level, size):
    leaves, spec = tree_flatten(result, is_leaf=_is_dict)
    if spec.is_leaf() and isinstance(out_dims, tuple) and len(out_dims) == 1:
        out_dims = out_dims[0]   # (torch takes (d,) for one output as d)
    dims = _dims_per_leaf(out_dims, spec, "out_dims")
    for leaf in leaves:
        if not isinstance(leaf, Tensor):
            raise ValueError(f"vmap: the function must return tensors (or tuples of them), "
                             f"got {type(leaf).__name__}")
    return tree_unflatten([unwrap(leaf, level, size, d) for leaf, d in zip(leaves, dims)], spec)


def unwrap(value: Tensor, level: int, size: int, out_dim: int = 0) -> Tensor:
    """The physical tensor of ``value`` at ``level``, batch at ``out_dim``.

    A tensor that is not batched at ``level`` (it did not depend on the
    batched inputs) is expanded along a new batch dimension, as in PyTorch.
    """
    batched = isinstance(value, BatchedTensor) and value._level == level
    if out_dim is None:   # an output that does not depend on the batch, returned as it is
        if batched:
            raise ValueError("vmap: out_dims is None for an output that depends on the "
                             "batched inputs: give it the dimension to put the batch at")
        return value
    if batched:
        physical = value._value
    else:
        physical = value.unsqueeze(0).expand(size, *value.shape)
    if out_dim % physical.ndim != 0:
        physical = physical.movedim(0, out_dim)
    return physical
