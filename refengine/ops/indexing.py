"""Indexing: ``__getitem__`` / ``__setitem__`` (basic indices give views,
advanced ones copy), index_put, gather, scatter, and the in-place writes
copy_, fill_, zero_."""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from .dispatch import call, call_inplace
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


deflinear("index", lambda self, indices: np.asarray(self[_np_index(indices)]),
          vjp={"self": lambda grad, self_shape, self_dtype, indices:
               _zeros(self_shape, grad.dtype if grad.is_complex() else self_dtype).index_put(
                   indices, grad, accumulate=True)},
          method=None, function=False)
deflinear("index_put", _index_put_forward,
          vjp={"self": lambda grad, indices, accumulate:
               grad if accumulate else grad.index_put(indices, grad.new_zeros(()), False),
               "values": lambda grad, indices: grad[indices]},
          inputs=("self", "values"), promote=None, inplace=True)


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


deflinear("gather", _gather,
          vjp={"self": lambda grad, self_shape, self_dtype, dim, index:
               _zeros(self_shape, self_dtype).scatter_add(dim, index, grad)},
          inputs=("self", "index"), nondiff=("index",))
deflinear("scatter", _scatter,
          vjp={"self": lambda grad, dim, index: grad.scatter(dim, index, 0.0),
               "src": lambda grad, dim, index, src_shape, src_dtype: _gather_into_src(
                   grad, dim, index, src_shape, src_dtype)},
          inputs=("self", "index", "src"), nondiff=("index",), promote=("self", "src"),
          inplace=True)
deflinear("scatter_add", _scatter_add,
          vjp={"self": lambda grad: grad,
               "src": lambda grad, dim, index, src_shape, src_dtype: _gather_into_src(
                   grad, dim, index, src_shape, src_dtype)},
          inputs=("self", "index", "src"), nondiff=("index",), inplace=True)


# In-place writes. The overwritten input gets no gradient (None).
defop("copy", lambda self, src: np.broadcast_to(src, self.shape).astype(self.dtype),
      vjp={"self": None, "src": lambda grad: grad},
      jvp=lambda src_t, self_shape, self_dtype: src_t.expand(self_shape).to(self_dtype),
      inputs=("self", "src"), node="CopyBackwards", method=None, function=False)
defop("fill", lambda self, value: np.full_like(self, value),
      vjp={"self": None, "value": lambda grad: grad.sum()},
      jvp=lambda self_t, value_t: self_t * 0 + value_t,
      inputs=("self", "value"), method=None, function=False)


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
    return call_inplace(OPS["fill"], self, 0)


@public("__getitem__", function=False)
def getitem(self, index):
    """Basic indices (ints, slices, None, ...) give views; others copy."""
    if isinstance(index, Tensor) and index.dtype.name in ("int64", "int32") and index.ndim == 0:
        index = int(index)
    if not _is_basic(index):
        return call(OPS["index"], self, index)
    items = index if isinstance(index, tuple) else (index,)
    specified = sum(1 for i in items if i is not None and i is not Ellipsis)
    if specified > self.ndim:
        raise IndexError(f"too many indices for tensor of dimension {self.ndim}")
    expanded = []
    for i in items:
        if i is Ellipsis:
            expanded.extend([slice(None)] * (self.ndim - specified))
        else:
            expanded.append(i)
    out, dim = self, 0
    for i in expanded:
        if i is None:
            out, dim = out.unsqueeze(dim), dim + 1
        elif isinstance(i, slice):
            if i != slice(None):
                out = out.slice(dim, i.start, i.stop, 1 if i.step is None else i.step)
            dim += 1
        else:
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
    call_inplace(OPS["index_put"], self, index, value.to(self.dtype))


@public(function=False)
def index_put_(self, indices, values, accumulate=False):
    return call_inplace(OPS["index_put"], self, indices, values, accumulate)


@public(function=False)
def new_zeros(self, *size, dtype=None):
    from .. import creation
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


deflinear("index_select", _index_select,
          vjp={"self": lambda grad, self_shape, self_dtype, dim, index:
               _zeros(self_shape, grad.dtype if grad.is_complex() else self_dtype).index_add(
                   dim, index, grad)},
          inputs=("self", "index"), nondiff=("index",))
deflinear("index_add", _index_add,
          vjp={"self": lambda grad: grad,
               "source": lambda grad, dim, index, alpha: grad.index_select(dim, index) * _conj(alpha)},
          inputs=("self", "index", "source"), nondiff=("index",), promote=("self", "source"),
          inplace=True)


def _masked_select(self, mask):
    if mask.dtype != np.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    s, m = np.broadcast_arrays(self, mask)
    return s[m]


def _masked_select_vjp(grad, self_shape, self_dtype, mask):
    shape = np.broadcast_shapes(tuple(self_shape), tuple(mask.shape))
    zeros = _zeros(shape, grad.dtype if grad.is_complex() else self_dtype)
    return zeros.index_put((mask.expand(shape),), grad, False)


deflinear("masked_select", _masked_select, vjp={"self": _masked_select_vjp},
          inputs=("self", "mask"), nondiff=("mask",))
