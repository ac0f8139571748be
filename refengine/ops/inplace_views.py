"""``as_strided``, the ``swapdims`` aliases, and the in-place view ops.

An in-place view op (``t_``, ``transpose_``, ``swapdims_``, ``swapaxes_``,
``squeeze_``, ``unsqueeze_``, ``as_strided_``) changes the shape of a
tensor without touching its memory. As in PyTorch it is an
in-place op (the version goes up, leaves and views of leaves that require
grad are refused) whose ``grad_fn`` is the view's node under its in-place
name (``TBackward1``...). It runs as the out-of-place view, whose result the
tensor then takes over. Views made of the tensor before keep reading it as
it was: each op leaves its undo in the tensor's geometry log (see
``dispatch._compose``).

``as_strided`` addresses memory: its size, strides and offset count
elements of the storage, as in PyTorch, and its vjp scatters through the
storage positions. Replaying it on another tensor (writes through its
views, tangents of views) reads that tensor's memory as the storage, which
is exact when the base is contiguous: refengine refuses to record
``as_strided`` on other bases (docs/differences.md).
"""
from __future__ import annotations

import numpy as np

from ..autograd import tangents
from ..batching.batched import BatchedTensor
from ..creation import tensor
from ..grad_mode import is_recording
from ..autograd.view_nodes import check_view_inplace
from .dispatch import _check_inplace, call
from .opdef import OPS, defop, public
from .shape import _norm_dim


def _owner(a: np.ndarray) -> np.ndarray:
    """The array that owns the memory ``a`` looks into: its storage."""
    owner, base = a, a.base
    while base is not None:      # NumPy's own as_strided puts a non-array in the chain
        if isinstance(base, np.ndarray):
            owner = base
        base = getattr(base, "base", None)
    return owner


def _memory(a: np.ndarray) -> np.ndarray:
    """The storage of ``a`` as a flat array of ``a``'s dtype, in memory order."""
    owner = _owner(a)
    if owner.flags.c_contiguous:
        mem = owner
    elif owner.flags.f_contiguous:
        mem = owner.T        # the same memory, read in address order
    else:
        raise RuntimeError("as_strided: the tensor's memory is not one contiguous block; "
                           "call .contiguous() first")
    return mem.reshape(-1).view(a.dtype)


def _geometry(a: np.ndarray) -> tuple:
    """``(shape, strides, offset)`` of ``a`` in elements of its storage."""
    owner, item = _owner(a), a.itemsize
    offset = (a.__array_interface__["data"][0] - owner.__array_interface__["data"][0]) // item
    return tuple(a.shape), tuple(s // item for s in a.strides), offset


def _positions(shape: tuple, strides: tuple, offset: int) -> np.ndarray:
    """The storage position of each element, in row-major order."""
    pos = np.asarray(offset, dtype=np.int64)
    for n, s in zip(shape, strides):
        pos = pos[..., None] + np.arange(n, dtype=np.int64) * s
    return pos.reshape(-1)


def _as_strided(self, size, stride, storage_offset, self_geometry):
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape: got size {list(size)} "
                           f"and stride {list(stride)}")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, "
                           f"got strides: {list(stride)}")
    owner, item = _owner(self), self.itemsize
    storage_items = owner.nbytes // item
    needed = storage_offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1
    if 0 in size:
        needed = storage_offset
    if needed > storage_items:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage "
                           f"offset {storage_offset}, and itemsize {item} requiring a storage "
                           f"size of {needed * item} are out of bounds for storage of size "
                           f"{storage_items * item}: the view must lie inside the tensor's memory")
    flat = _memory(self)
    return np.lib.stride_tricks.as_strided(flat[storage_offset:], size,
                                           tuple(s * item for s in stride))


def _as_strided_vjp(grad, self_geometry, size, stride, storage_offset):
    # scatter the gradient to the storage positions the output reads, share
    # each position among the input elements that alias it, gather the input's
    inputs = _positions(*self_geometry)
    outputs = _positions(size, stride, storage_offset)
    n = int(max(inputs.max(initial=-1), outputs.max(initial=-1))) + 1
    storage = grad.new_zeros((n,)).index_add(0, _index(outputs), grad.reshape(-1))
    counts = np.bincount(inputs, minlength=n)
    if counts.max(initial=0) > 1:
        storage = storage / _index(np.maximum(counts, 1)).to(storage.dtype)
    return storage.index_select(0, _index(inputs)).reshape(self_geometry[0])


def _as_strided_jvp(self_t, self_geometry, size, stride, storage_offset):
    inputs = _positions(*self_geometry)
    outputs = _positions(size, stride, storage_offset)
    n = int(max(inputs.max(initial=-1), outputs.max(initial=-1))) + 1
    # positions the input does not cover carry no tangent of the input
    storage = self_t.new_zeros((n,)).index_put((_index(inputs),), self_t.reshape(-1))
    return storage.index_select(0, _index(outputs)).reshape(size)


def _index(values: np.ndarray):
    return tensor(values)


defop("as_strided_op", _as_strided, vjp={"self": _as_strided_vjp}, jvp=_as_strided_jvp,
      node="AsStridedBackward0", view=True, method=None, function=False)


def _plain(a: np.ndarray) -> bool:
    """Whether ``a`` is its whole storage, in row-major order."""
    return a.flags.c_contiguous and _geometry(a)[2] == 0 and _owner(a).nbytes == a.nbytes


@public(function=False)
def as_strided(input, size, stride, storage_offset=None):
    """A view of ``input``'s storage with the given size, strides and offset (in elements)."""
    geometry = _geometry(input._data)
    offset = geometry[2] if storage_offset is None else int(storage_offset)
    root = input._base if input._base is not None else input
    differentiated = (is_recording() and input.requires_grad) or any(
        tangents.get_tangent(input, level) is not None for level in tangents.active_levels())
    if differentiated and not _plain(root._data):
        raise RuntimeError("as_strided: refengine differentiates as_strided only on a tensor "
                           "whose base is contiguous (its writes and tangents replay the view "
                           "on contiguous copies); call .contiguous() or .clone() first")
    return call(OPS["as_strided_op"], input, tuple(size), tuple(stride), offset, geometry)


@public()
def swapdims(input, dim0, dim1):
    """``transpose(input, dim0, dim1)`` under NumPy's name."""
    return call(OPS["transpose"], input, dim0, dim1)


@public()
def swapaxes(input, axis0, axis1):
    """``transpose(input, axis0, axis1)`` under NumPy's name."""
    return call(OPS["transpose"], input, axis0, axis1)


# ----- the in-place view ops ---------------------------------------------------
def _take_over(self, out, node_name: str, undo) -> None:
    """``self`` becomes the view ``out`` (made from ``self``) and takes its history."""
    old_fn, node = self.grad_fn, out._grad_fn
    self._data = out._data
    if self._base is not None:
        # a view stays a view of the same base, along the longer path
        self._view_fn = out._view_fn
        self._fw_base, self._fw_view_fn = out._fw_base, out._fw_view_fn
    else:
        log = self._geometry_log
        if log is None:
            log = self._geometry_log = []
        # views made before regenerate their grad_fn from the new shape (the
        # version bump below tells them), as in PyTorch
        log.append(undo)
    if node is not None:
        node._name = node_name
        self._grad_fn, self._output_nr = node, 0
        if self._retains_grad and old_fn is not None:
            old_fn._drop_retains_grad(self)
            node._set_retains_grad(self)
    for level, tangent in out._fw_grads.items():
        tangents.set_tangent(self, level, tangent)
    self._bump_version()
    if self._base is not None:
        self._view_version = self._storage.version   # its node is the one just made
    elif undo is _cannot_replay:
        self._replay_barrier = self._storage.version


def _inplace_view(self, op: str, node_name: str, args: tuple, undo):
    """Run view ``op`` on ``self`` in place; ``undo(k)`` maps the new shape back
    to the old one, for a tensor with ``k`` (vmap) batch dims in front."""
    _check_inplace(self)
    if self._view_meta is not None and is_recording() and self.requires_grad:
        check_view_inplace(self)
    out = call(OPS[op], self, *args)
    target, k = self, 0
    while isinstance(target, BatchedTensor):   # under vmap the physical tensor changes
        target, out, k = target._value, out._value, k + 1
    _take_over(target, out, node_name, undo(k))
    return self


def _cannot_replay(base):
    raise RuntimeError("as_strided_: a view made before an in-place as_strided_ on its base "
                       "cannot be read from the base any more in refengine (the new geometry "
                       "has no inverse); make the view after as_strided_, or use as_strided")


@public(function=False)
def stride(self, dim=None):
    """The strides of ``self`` in elements (one dim's, or all as a tuple)."""
    strides = _geometry(self._data)[1]
    return strides if dim is None else strides[_norm_dim(dim, self.ndim)]


@public(function=False)
def storage_offset(self) -> int:
    """Where ``self`` starts in its storage, in elements."""
    return _geometry(self._data)[2]


@public(function=False)
def transpose_(self, dim0, dim1):
    """In-place ``transpose``: ``self`` gets dims ``dim0`` and ``dim1`` swapped."""
    dim0, dim1 = _norm_dim(dim0, self.ndim), _norm_dim(dim1, self.ndim)
    return _inplace_view(self, "transpose", "TransposeBackward1", (dim0, dim1),
                         lambda k: lambda base: base.transpose(dim0 + k, dim1 + k))


@public(function=False)
def swapdims_(self, dim0, dim1):
    """In-place ``swapdims`` (``transpose_``)."""
    return transpose_(self, dim0, dim1)


@public(function=False)
def swapaxes_(self, axis0, axis1):
    """In-place ``swapaxes`` (``transpose_``)."""
    return transpose_(self, axis0, axis1)


@public(function=False)
def t_(self):
    """In-place ``t``."""
    if self.ndim > 2:
        raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
    swapped = self.ndim == 2

    def undo(k):
        return lambda base: base.transpose(k, k + 1) if swapped else base
    return _inplace_view(self, "t", "TBackward1", (), undo)


@public(function=False)
def squeeze_(self, dim=None):
    """In-place ``squeeze``: drop the size-1 dims (all, or those of ``dim``)."""
    shape, ndim = tuple(self.shape), self.ndim
    if dim is None:
        dims, name = range(ndim), "SqueezeBackward3"
    else:
        listed = (dim,) if isinstance(dim, int) else tuple(dim)
        dims = sorted({_norm_dim(d, ndim) for d in listed}) if ndim else ()
        name = "SqueezeBackward4" if isinstance(dim, int) else "SqueezeBackward5"
    removed = [d for d in dims if shape[d] == 1]

    def undo(k):
        def unsqueezed(base):
            for d in removed:
                base = base.unsqueeze(d + k)
            return base
        return unsqueezed
    return _inplace_view(self, "squeeze", name, (dim,), undo)


@public(function=False)
def unsqueeze_(self, dim):
    """In-place ``unsqueeze``: a size-1 dim at ``dim``."""
    d = _norm_dim(dim, self.ndim + 1)
    return _inplace_view(self, "unsqueeze", "UnsqueezeBackward1", (dim,),
                         lambda k: lambda base: base.squeeze(d + k))


@public(function=False)
def as_strided_(self, size, stride, storage_offset=None):
    """In-place ``as_strided``: ``self`` becomes that view of its storage."""
    _check_inplace(self)
    out = as_strided(self, size, stride, storage_offset)
    if self._view_meta is not None and is_recording() and self.requires_grad:
        check_view_inplace(self)
    _take_over(self, out, "AsStridedBackward1", _cannot_replay)
    return self
