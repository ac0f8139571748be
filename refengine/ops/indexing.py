"""Indexing: ``__getitem__`` / ``__setitem__`` (basic indices give views,
advanced ones copy), index_put, gather, scatter, and the in-place writes
copy_, fill_, zero_."""
from __future__ import annotations

import numpy as np

from ..batching.batched import BatchedTensor, NotBatchable
from ..batching.rules import elementwise, pad_to, shift_dim
from ..tensor import Tensor
from .dispatch import broadcast_error, call, call_inplace
from .opdef import OPS, deflinear, defop, public


def _np_index(index):
    """An index with tensors replaced by arrays (what NumPy indexes with)."""
    if isinstance(index, tuple):
        return tuple(_np_index(i) for i in index)
    if isinstance(index, Tensor):
        return index._data
    if isinstance(index, list):
        return np.asarray(index)
    return index


def _as_index(index) -> tuple:
    """An advanced index as PyTorch reads it: a tuple, its lists and arrays as
    tensors, which the node saves (a list changed later changes nothing)."""
    if not isinstance(index, tuple):
        index = (index,)
    return tuple(_index_item(i) for i in index)


def _index_item(item):
    if isinstance(item, (list, np.ndarray)):
        from .. import creation
        array = np.array(item)
        return creation.tensor(array if array.size else array.astype(np.int64))
    return item


def _is_basic(index) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    return all(i is None or i is Ellipsis or isinstance(i, (slice, int, np.integer))
               and not isinstance(i, (bool, np.bool_)) for i in items)


def _index_put_forward(self, indices, values, accumulate=False):
    out = self.copy()
    idx = _np_index(indices)
    if accumulate:
        np.add.at(out, idx, values)
    else:
        out[idx] = values
    return out


# ----- batching index / index_put. The physical index is the example's index
# with the batch dim in front: a full slice, or, when index tensors are batched
# themselves, an arange that pairs example b with its own index. NumPy places
# the dims of advanced indices (ints count as such among them) where they stand
# when they are consecutive, and first otherwise; the batch dim must end up
# first, so the result may need a permutation.
def _items(indices) -> tuple:
    items = indices if isinstance(indices, tuple) else (indices,)
    return tuple(np.asarray(i) if isinstance(i, list) else i for i in items)


def _batched_items(c) -> tuple:
    """The index items (physical where batched) and which are batched."""
    if "indices" in c.batched:     # one tensor
        return (c.env["indices"],), [True]
    if "indices" in c.items:       # a tuple with batched tensors (the runtime made it a list)
        return _items(tuple(c.env["indices"])), c.items["indices"]
    items = _items(c.env["indices"])
    return items, [False] * len(items)


def _is_advanced(i) -> bool:
    return isinstance(i, (Tensor, np.ndarray, int, np.integer))


def _is_mask(i) -> bool:
    return isinstance(i, (Tensor, np.ndarray)) and str(i.dtype).endswith("bool")


def _layout(items, batched, ndim: int) -> tuple:
    """(k, p, rest) for ``x[items]`` on an ``ndim``-dim ``x``: the advanced indices
    broadcast to ``k`` dims, which follow ``p`` result dims when the advanced
    indices are consecutive (``p`` is None when they are not: they go first);
    ``rest`` result dims come from slices, None, the Ellipsis and the dims
    not indexed."""
    adv = [n for n, i in enumerate(items) if _is_advanced(i)]
    k = max((1 if _is_mask(i) else i.ndim - b for i, b in zip(items, batched)
             if isinstance(i, (Tensor, np.ndarray))), default=0)
    used = sum(i.ndim - b if _is_mask(i) else 1 for i, b in zip(items, batched)
               if i is not None and i is not Ellipsis)
    dims = [0 if _is_advanced(i) else ndim - used if i is Ellipsis else 1 for i in items]
    rest = sum(dims) + (0 if any(i is Ellipsis for i in items) else ndim - used)
    if not adv:
        return 0, 0, rest
    consecutive = adv == list(range(adv[0], adv[-1] + 1))
    return k, sum(dims[:adv[0]]) if consecutive else None, rest


def _physical_index(c) -> tuple:
    """(the physical index, the permutation that puts the batch dim of its result
    first, the rank of the example's result)."""
    items, batched = _batched_items(c)
    if any(isinstance(i, (bool, np.bool_)) for i in items):
        raise NotBatchable("a bool scalar index")
    k, p, rest = _layout(items, batched, c.rank("self"))
    R = 1 + k + rest
    if not any(batched):
        # a leading full slice: the batch dim stays in front, unless NumPy moves
        # the (non-consecutive) advanced dims before it
        perm = None if p is not None else (k,) + tuple(range(k)) + tuple(range(k + 1, R))
        return (slice(None),) + items, perm, R - 1
    if any(b and _is_mask(i) for i, b in zip(items, batched)):
        raise RuntimeError("vmap: indexing with a batched boolean mask gives each example a "
                           "result of its own size, which cannot be batched; index with the "
                           "mask outside vmap or use refengine.where")
    from .. import creation
    batch = creation.tensor(np.arange(c.size).reshape((c.size,) + (1,) * k))
    items = tuple(pad_to(i, k) if b else i for i, b in zip(items, batched))
    perm = None
    if p:   # consecutive after p dims in the example; the arange made them go first
        perm = ((0,) + tuple(range(k + 1, k + 1 + p)) + tuple(range(1, k + 1))
                + tuple(range(k + 1 + p, R)))
    return (batch,) + items, perm, R - 1


def _index_rule(c):
    indices, perm, _ = _physical_index(c)
    out = c.run(self=c.materialize("self"), indices=indices)
    return out if perm is None else out.permute(perm)


def _index_put_rule(c):
    indices, perm, rank = _physical_index(c)
    values = c.env["values"]
    if "values" in c.batched:
        values = pad_to(values, rank)
    elif perm is not None:
        values = values.reshape((1,) * (rank + 1 - values.ndim) + tuple(values.shape))
    if perm is not None:    # the values in the layout of the physical indexed region
        from .shape import _perm_inverse
        values = values.permute(_perm_inverse(perm))
    # in place, self is batched already (the runtime refuses an unbatched one)
    return c.run(self=c.materialize("self"), indices=indices, values=values)


deflinear("index", lambda self, indices: np.asarray(self[_np_index(indices)]),
          vjp={"self": lambda grad, self_shape, self_dtype, indices:
               _zeros(self_shape, grad.dtype if grad.is_complex() else self_dtype).index_put(
                   indices, grad, accumulate=True)},
          method=None, function=False, batch=_index_rule)
deflinear("index_put", _index_put_forward,
          vjp={"self": lambda grad, indices, accumulate:
               grad if accumulate else grad.index_put(indices, grad.new_zeros(()), False),
               "values": lambda grad, indices: grad[indices]},
          inputs=("self", "values"), promote=None, inplace=True, batch=_index_put_rule)


def _zeros(shape, dtype):
    from .. import creation
    return creation.zeros(shape, dtype=dtype)


def _index_region(self, dim, index):
    """(dim, the part of ``self`` an index addresses): torch uses only the index's
    extent in the other dims, where NumPy's *_along_axis would broadcast it."""
    d = dim % self.ndim if self.ndim else 0
    return d, tuple(slice(None) if i == d else slice(0, s) for i, s in enumerate(index.shape))


def _gather(self, dim, index):
    d, region = _index_region(self, dim, index)
    return np.take_along_axis(self[region], index, axis=d)


def _src_region(index_shape) -> tuple:
    """The part of ``src`` that scatter reads: ``src[:i0, :i1, ...]`` for index shape (i0, i1, ...)."""
    return tuple(slice(0, s) for s in index_shape)


def _scatter(self, dim, index, src):
    out = self.copy()
    src = np.broadcast_to(src, index.shape) if np.ndim(src) == 0 else src[_src_region(index.shape)]
    d, region = _index_region(out, dim, index)
    np.put_along_axis(out[region], index, src, axis=d)   # out[region] is a view: writes land
    return out


def _scatter_add(self, dim, index, src):
    out = self.copy()
    idx = list(np.indices(index.shape, sparse=True))
    idx[dim] = index
    np.add.at(out, tuple(idx), src[_src_region(index.shape)])
    return out


def _gather_into_src(grad, dim, index, src_shape, src_dtype):
    """The gradient of scatter's ``src``: gathered where it was read, zero elsewhere."""
    from .shape import embed
    picked = grad.gather(dim, index)
    if tuple(src_shape) == tuple(index.shape):
        return picked
    return embed(picked, tuple(src_shape), src_dtype, lambda z: z[_src_region(index.shape)])


# gather and scatter read the index's extent in every dim, the batch dim
# included: self, index and src all get the batch (unbatched ones expanded).
def _gather_rule(c):
    rank = c.rank("self")
    return c.run(self=c.materialize("self"), index=c.materialize("index"),
                 dim=shift_dim(c.env["dim"], rank))


def _scatter_rule(c):
    rank = c.rank("self")
    index, src = c.materialize("index"), c.env["src"]
    if isinstance(src, Tensor) and c.rank("src") > 0:
        src = c.materialize("src")
    elif "src" in c.batched:    # one value per example, spread over its index
        src = pad_to(src, rank).expand(index.shape)
    # an unbatched number (or 0-d src) is broadcast to the index by the op itself
    return c.run(self=c.materialize("self"), index=index, src=src,
                 dim=shift_dim(c.env["dim"], rank))


deflinear("gather", _gather,
          vjp={"self": lambda grad, self_shape, self_dtype, dim, index:
               _zeros(self_shape, self_dtype).scatter_add(dim, index, grad)},
          inputs=("self", "index"), nondiff=("index",), batch=_gather_rule)
deflinear("scatter", _scatter,
          vjp={"self": lambda grad, dim, index: grad.scatter(dim, index, 0.0),
               "src": lambda grad, dim, index, src_shape, src_dtype: _gather_into_src(
                   grad, dim, index, src_shape, src_dtype)},
          inputs=("self", "index", "src"), nondiff=("index",), promote=("self", "src"),
          inplace=True, batch=_scatter_rule)
deflinear("scatter_add", _scatter_add,
          vjp={"self": lambda grad: grad,
               "src": lambda grad, dim, index, src_shape, src_dtype: _gather_into_src(
                   grad, dim, index, src_shape, src_dtype)},
          inputs=("self", "index", "src"), nondiff=("index",), inplace=True, batch=_scatter_rule)


# In-place writes. The overwritten input's gradient is zero (a tensor of zeros,
# as in PyTorch, not None); so is its tangent. copy and fill broadcast their
# value into self, as elementwise ops broadcast. Their value's gradient is
# grad, which the engine sums down to the value's shape (fill's number: all of
# grad; under vmap: each example's part).
def _zeros_of(t):
    return t.new_zeros(t.shape)   # not t * 0: an inf or nan in t must not leak


def _copy(self, src):
    """``src`` broadcast to ``self``'s shape; torch's error where it would grow it."""
    try:
        shape = np.broadcast_shapes(np.shape(self), np.shape(src))
    except ValueError:
        raise RuntimeError(broadcast_error([np.shape(self), np.shape(src)])) from None
    if shape != np.shape(self):
        raise RuntimeError(f"output with shape {list(np.shape(self))} doesn't match the "
                           f"broadcast shape {list(shape)}")
    return np.broadcast_to(src, np.shape(self)).astype(self.dtype)


defop("copy", _copy,
      vjp={"self": lambda grad: _zeros_of(grad), "src": lambda grad: grad},
      jvp=lambda src_t, self_shape, self_dtype: src_t.expand(self_shape).to(self_dtype),
      inputs=("self", "src"), node="CopyBackwards", method=None, function=False,
      batch=elementwise)
defop("fill", lambda self, value: np.full_like(self, value),
      vjp={"self": lambda grad: _zeros_of(grad), "value": lambda grad: grad},
      jvp=lambda self_t, value_t: _zeros_of(self_t) + value_t,
      # PyTorch names fill_'s node by the kind of value
      variant=lambda raw: "FillBackward3" if isinstance(raw["value"], Tensor) else "FillBackward2",
      inputs=("self", "value"), method=None, function=False, batch=elementwise)
defop("zero", lambda self: np.zeros_like(self), vjp={"self": lambda grad: _zeros_of(grad)},
      jvp=lambda self_t: _zeros_of(self_t), node="ZeroBackward0", method=None, function=False,
      batch=elementwise)


@public(function=False)
def copy_(self, src):
    """Write ``src`` (broadcast, cast) into ``self``; differentiable in ``src``."""
    if not isinstance(src, Tensor):
        from .dispatch import wrap_number
        src = wrap_number(src)
    return call_inplace(OPS["copy"], self, src)


@public(function=False)
def fill_(self, value):
    return call_inplace(OPS["fill"], self, value)


@public(function=False)
def zero_(self):
    return call_inplace(OPS["zero"], self)


@public("__getitem__", function=False)
def getitem(self, index):
    """Basic indices (ints, slices, None, ...) give views; others copy."""
    # a 0-d int tensor is an int, unless batched (under vmap): one int per example
    was_tensor = isinstance(index, Tensor)
    if (was_tensor and not isinstance(index, BatchedTensor)
            and index.dtype.name in ("int64", "int32") and index.ndim == 0):
        index = int(index)
    if not _is_basic(index):
        return call(OPS["index"], self, _as_index(index))
    items = index if isinstance(index, tuple) else (index,)
    specified = sum(1 for i in items if i is not None and i is not Ellipsis)
    if specified > self.ndim:
        first = next(i for i in items if i is not None and i is not Ellipsis)
        if self.ndim == 0 and not was_tensor and type(first) in (int, slice):   # torch's words
            raise IndexError("slice() cannot be applied to a 0-dim tensor." if type(first) is slice
                             else "invalid index of a 0-dim tensor. Use `tensor.item()` in Python "
                             "or `tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
        raise IndexError(f"too many indices for tensor of dimension {self.ndim}")
    expanded = []       # (index, its position in ``items``: torch's error names it)
    for at, i in enumerate(items):
        if i is Ellipsis:
            expanded.extend([(slice(None), at)] * (self.ndim - specified))
        else:
            expanded.append((i, at))
    out, dim = self, 0
    for i, at in expanded:
        if i is None:
            out, dim = out.unsqueeze(dim), dim + 1
        elif isinstance(i, slice):
            if i != slice(None):
                out = out.slice(dim, i.start, i.stop, 1 if i.step is None else i.step)
            dim += 1
        else:
            size = out.shape[dim]
            if not -size <= int(i) < size:     # indexing words it otherwise than select()
                raise IndexError(f"index {int(i)} is out of bounds for dimension {at} with "
                                 f"size {size}")
            out = out.select(dim, int(i))
    return out if out is not self else call(OPS["alias"], self)


@public("__setitem__", function=False)
def setitem(self, index, value) -> None:
    """``x[index] = value``: differentiable in both ``x`` and ``value``."""
    if _is_basic(index):
        copy_(getitem(self, index), value)
        return
    if not isinstance(value, Tensor):
        from .dispatch import wrap_number
        value = wrap_number(value)
    call_inplace(OPS["index_put"], self, _as_index(index), value.to(self.dtype))


@public(function=False)
def index_put_(self, indices, values, accumulate=False):
    return call_inplace(OPS["index_put"], self, _as_index(indices), values, accumulate)


@public(function=False)
def new_zeros(self, *size, dtype=None):
    """Zeros of ``size``; under vmap, as in PyTorch, batched when ``self`` is."""
    from .. import creation
    if isinstance(self, BatchedTensor):
        from .shape import _shape_arg
        inner = new_zeros(self._value, (self.batch_size,) + _shape_arg(size), dtype=dtype)
        return BatchedTensor(inner, self._level)
    return creation.zeros(*size, dtype=dtype or self.dtype)


# ----- index_select / index_add: each the other's adjoint; masked_select -------
def _index_select(self, dim, index):
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if self.ndim == 0:
        return np.take(self.reshape(1), index.reshape(-1)).reshape(index.shape)
    return np.take(self, index.reshape(-1), axis=dim % self.ndim)


def _index_add(self, dim, index, source, alpha=1):
    out = self.copy()
    where = (slice(None),) * (dim % max(self.ndim, 1)) + (index.reshape(-1),)
    np.add.at(out, where if self.ndim else (index.reshape(-1),),
              source * alpha if alpha != 1 else source)
    return out


def _conj(x):
    return x.conjugate() if isinstance(x, complex) else x


# A batched index (one per example) turns index_select into a gather and
# index_add into a scatter_add, with the index spread along the other dims.
def _spread(c, dim: int, like):
    """The batched 1-d ``index`` as a gather/scatter index shaped like ``like``,
    its entries along ``dim`` (a 0-d index is one entry, as in the op)."""
    if c.rank("index") > 1:
        raise NotBatchable("an index of more than one dim: the loop raises the op's error")
    index = c.env["index"].reshape(c.size, -1)
    view = [c.size] + [1] * (like.ndim - 1)
    view[dim] = index.shape[1]
    shape = list(like.shape)
    shape[dim] = index.shape[1]
    return index.reshape(view).expand(shape)


def _index_select_rule(c):
    rank = c.rank("self")
    dim = shift_dim(c.env["dim"], rank)
    if "index" not in c.batched:
        return c.run(dim=dim)
    self_ = c.materialize("self")
    return c.run(OPS["gather"], self=self_, dim=dim, index=_spread(c, dim, self_))


def _index_add_rule(c):
    rank = c.rank("self")
    dim = shift_dim(c.env["dim"], rank)
    self_, source = c.materialize("self"), c.materialize("source")
    if "index" not in c.batched:
        return c.run(self=self_, source=source, dim=dim)
    alpha = c.env["alpha"]
    if alpha != 1:
        source = source * alpha
    return c.run(OPS["scatter_add"], self=self_, dim=dim, index=_spread(c, dim, source),
                 src=source)


deflinear("index_select", _index_select,
          vjp={"self": lambda grad, self_shape, self_dtype, dim, index:
               _zeros(self_shape, grad.dtype if grad.is_complex() else self_dtype).index_add(
                   dim, index, grad)},
          inputs=("self", "index"), nondiff=("index",), batch=_index_select_rule)
deflinear("index_add", _index_add,
          vjp={"self": lambda grad: grad,
               # torch's maybe_multiply: alpha 1 leaves the gradient as it is
               "source": lambda grad, dim, index, alpha: grad.index_select(dim, index)
               if alpha == 1 else grad.index_select(dim, index) * _conj(alpha)},
          inputs=("self", "index", "source"), nondiff=("index",), promote=("self", "source"),
          inplace=True, batch=_index_add_rule)


def _masked_select(self, mask):
    if mask.dtype != np.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    s, m = np.broadcast_arrays(self, mask)
    return s[m]


def _masked_select_vjp(grad, self_shape, self_dtype, mask):
    shape = np.broadcast_shapes(tuple(self_shape), tuple(mask.shape))
    zeros = _zeros(shape, grad.dtype if grad.is_complex() else self_dtype)
    return zeros.index_put((mask.expand(shape),), grad, False)


# No batching rule: the result's size is the number of selected entries, which
# differs between examples (PyTorch's vmap refuses masked_select too). It runs
# once per example; its backward (an index_put) batches.
deflinear("masked_select", _masked_select, vjp={"self": _masked_select_vjp},
          inputs=("self", "mask"), nondiff=("mask",))
