"""Shape ops. The views (view, transpose, permute, expand, squeeze, unsqueeze,
select, slice, diagonal, alias) return NumPy views sharing the input's
storage; their vjps put ``grad`` back where the view came from."""
from __future__ import annotations

import math

import numpy as np

from ..batching.batched import NotBatchable
from ..batching.rules import (elementwise, item_rank, materialize_items, matrices, over_dims,
                              pad_to, shift_dim, shift_dims)
from .dispatch import call
from .layout import preserved
from .opdef import OPS, deflinear, public

V = dict(view=True)


def embed(grad, shape: tuple, dtype, view):
    """A zero tensor of ``shape`` with ``grad`` written into ``view(zeros)``.

    The write is an in-place copy into a view, so under ``create_graph`` it
    is recorded (CopySlices) and the result is differentiable in ``grad``.
    The zeros come from ``grad.new_zeros``: in a batched backward (under vmap)
    they are batched like ``grad``, so the write stays one per example.
    """
    full = grad.new_zeros(shape, dtype=grad.dtype if grad.is_complex() else dtype)
    view(full).copy_(grad)
    return full


def _shape_arg(shape) -> tuple:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return tuple(int(s) for s in shape)


def _view(self, shape):
    out = self.view()
    try:
        out.shape = _infer(shape, self.size)
    except AttributeError:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at "
                           "least one dimension spans across two contiguous subspaces). Use "
                           ".reshape(...) instead.") from None
    return out


def _infer(shape: tuple, numel: int) -> tuple:
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    # math.prod: the same integers as np.prod without NumPy's reduction machinery
    # (several calls per reshape, a tenth of a small convolution's check)
    known = math.prod(s for s in shape if s != -1)
    if -1 in shape:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    if math.prod(shape) != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


def _reshape_rule(c):
    # the batch dim stays whole in front; only each example's dims are regrouped
    numel = math.prod(c.env["self"].shape[1:])
    return c.run(shape=(c.size,) + _infer(tuple(c.env["shape"]), numel))


deflinear("view_op", _view, vjp={"self": lambda grad, self_shape: grad.reshape(self_shape)},
          node="ViewBackward0", method=None, function=False, batch=_reshape_rule, **V)
deflinear("reshape_copy", lambda self, shape: np.reshape(self, _infer(shape, self.size)).copy(),
          vjp={"self": lambda grad, self_shape: grad.reshape(self_shape)},
          node="UnsafeViewBackward0", method=None, function=False, batch=_reshape_rule)


@public(function=False)
def view(self, *shape):
    """A view with a new shape (raises where a copy would be needed)."""
    if len(shape) == 1 and not isinstance(shape[0], (tuple, list, int, np.integer)):
        raise TypeError("view(dtype) is not supported; give a shape")
    return call(OPS["view_op"], self, _shape_arg(shape))


@public()
def reshape(input, *shape):
    """A view with the new shape when possible, otherwise a copy."""
    target = _infer(_shape_arg(shape), input.numel())
    # Try the view: view_op raises (before recording anything) where the strides
    # need a copy. Trying rather than probing the array keeps this free of
    # ``_data``, which a batched tensor under vmap does not have.
    try:
        return call(OPS["view_op"], input, target)
    except RuntimeError:
        return call(OPS["reshape_copy"], input, target)


def _perm_inverse(dims):
    inv = [0] * len(dims)
    for i, d in enumerate(dims):
        inv[d] = i
    return tuple(inv)


def _norm_dim(d: int, ndim: int) -> int:
    n = max(ndim, 1)
    if not -n <= d < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {d})")
    return d % n


def _transpose_rule(c):
    rank = c.rank("self")
    if rank == 0:   # dims 0 and -1 of a 0-d tensor name the tensor itself: the identity
        return c.run(OPS["alias"])
    return c.run(dim0=shift_dim(c.env["dim0"], rank), dim1=shift_dim(c.env["dim1"], rank))


def _swapaxes(self, dim0, dim1):
    dim0, dim1 = _norm_dim(dim0, self.ndim), _norm_dim(dim1, self.ndim)   # torch's IndexError
    return np.swapaxes(self, dim0, dim1) if self.ndim else self


deflinear("transpose", _swapaxes,
          vjp={"self": lambda grad, dim0, dim1: grad.transpose(dim0, dim1)},
          batch=_transpose_rule, **V)


def _t(self):
    if self.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
    return self.T


def _t_rule(c):
    rank = c.rank("self")
    if rank > 2:
        raise NotBatchable("t() of a tensor of more than 2 dims: the loop raises t's error")
    if rank < 2:    # t() of a 0-d or 1-d tensor is the tensor itself
        return c.run(OPS["alias"])
    return c.run(OPS["transpose"], dim0=1, dim1=2)


def _permute_rule(c):
    rank, dims = c.rank("self"), tuple(c.env["dims"])
    if len(dims) != rank:
        raise NotBatchable("permute's dims do not match the rank: the loop raises its error")
    return c.run(dims=(0,) + tuple(shift_dim(d, rank) for d in dims))


deflinear("t", _t, vjp={"self": lambda grad: grad.t()}, node="TBackward0", batch=_t_rule, **V)
deflinear("permute_op", lambda self, dims: np.transpose(self, dims),
          vjp={"self": lambda grad, dims: grad.permute(_perm_inverse(
              [_norm_dim(d, len(dims)) for d in dims]))},
          node="PermuteBackward0", method=None, function=False, batch=_permute_rule, **V)


@public()
def permute(input, *dims):
    return call(OPS["permute_op"], input, tuple(_norm_dim(d, input.ndim) for d in _shape_arg(dims)))


def _expand(self, sizes):
    lead = len(sizes) - self.ndim
    if lead < 0:
        raise RuntimeError(f"expand: the number of sizes provided ({len(sizes)}) must be greater "
                           f"or equal to the number of dimensions in the tensor ({self.ndim})")
    target = tuple(self.shape[i - lead] if s == -1 else s for i, s in enumerate(sizes))
    try:
        return np.broadcast_to(self, target)
    except ValueError:
        raise RuntimeError(f"The expanded size of the tensor must match the existing size at "
                           f"non-singleton dimensions. Target sizes: {list(sizes)}. Tensor "
                           f"sizes: {list(self.shape)}") from None


def _expand_rule(c):
    # size-1 dims after the batch dim stand for the leading dims expand adds;
    # -1 keeps the batch dim
    sizes = tuple(c.env["sizes"])
    if len(sizes) < c.rank("self"):
        raise NotBatchable("fewer sizes than dims: the loop raises expand's error")
    return c.run(self=pad_to(c.env["self"], len(sizes)), sizes=(-1,) + sizes)


# expand's vjp is the identity: the engine sums the broadcast dimensions.
deflinear("expand_op", _expand, vjp={"self": lambda grad: grad}, node="ExpandBackward0",
          method=None, function=False, batch=_expand_rule, **V)


@public(function=False)
def expand(self, *sizes):
    return call(OPS["expand_op"], self, _shape_arg(sizes))


@public(function=False)
def expand_as(self, other):
    return expand(self, *other.shape)


@public(function=False)
def view_as(self, other):
    return view(self, *other.shape)


def _squeeze(self, dim=None):
    if dim is None:
        return np.squeeze(self)
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    dims = tuple(_norm_dim(d, self.ndim) for d in dims if self.ndim)
    return np.squeeze(self, axis=tuple(d for d in dims if self.shape[d] == 1))


def _squeeze_rule(c):
    shape, dim = tuple(c.env["self"].shape[1:]), c.env["dim"]
    if not shape:   # squeezing a 0-d tensor leaves it as it is
        return c.run(OPS["alias"])
    if dim is None:     # every size-1 dim of the example, never the batch dim
        return c.run(dim=tuple(d + 1 for d, s in enumerate(shape) if s == 1))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    return c.run(dim=tuple(shift_dim(d, len(shape)) for d in dims))


deflinear("squeeze", _squeeze, vjp={"self": lambda grad, self_shape: grad.reshape(self_shape)},
          variant=lambda raw: "SqueezeBackward0" if raw.get("dim") is None else "SqueezeBackward1",
          batch=_squeeze_rule, **V)
deflinear("unsqueeze", lambda self, dim: np.expand_dims(self, _norm_dim(dim, self.ndim + 1)),
          vjp={"self": lambda grad, dim: grad.squeeze(dim)},
          batch=over_dims("dim", extra=1), **V)


def _select(self, dim, index):
    if self.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    dim = _norm_dim(dim, self.ndim)
    size = self.shape[dim]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(self.shape)} at dimension {dim}")
    # the trailing Ellipsis keeps a 0-d result a view (a bare a[i] is a NumPy scalar copy)
    return self[(slice(None),) * dim + (index, Ellipsis)]


deflinear("select", _select,
          vjp={"self": lambda grad, self_shape, self_dtype, dim, index:
               embed(grad, self_shape, self_dtype, lambda z: z.select(dim, index))},
          batch=over_dims("dim"), **V)


def _slice(self, dim=0, start=None, end=None, step=1):
    if step <= 0:
        raise ValueError("step must be greater than zero")
    dim = _norm_dim(dim, self.ndim)
    return self[(slice(None),) * dim + (slice(start, end, step),)]


deflinear("slice", _slice,
          vjp={"self": lambda grad, self_shape, self_dtype, dim, start, end, step:
               embed(grad, self_shape, self_dtype, lambda z: z.slice(dim, start, end, step))},
          method="slice", function=False, batch=over_dims("dim"), **V)


@public()
def narrow(input, dim: int, start: int, length: int):
    """The slice ``start:start+length`` of ``dim`` (a view)."""
    if input.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    size = input.shape[_norm_dim(dim, input.ndim)]
    if start < 0:
        start += size
    if not 0 <= start <= size or length < 0 or start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return call(OPS["slice"], input, dim, start, start + length, 1)


def _diagonal(self, offset=0, dim1=0, dim2=1):
    # np.diagonal gives a read-only view; the same strides over a writable
    # start give the writable view that in-place writes (and embed) need.
    d1, d2 = _norm_dim(dim1, self.ndim), _norm_dim(dim2, self.ndim)
    diag = np.diagonal(self, offset, d1, d2)
    start = [slice(None)] * self.ndim
    start[d2 if offset >= 0 else d1] = slice(abs(offset), None)
    return np.lib.stride_tricks.as_strided(self[tuple(start)], diag.shape, diag.strides,
                                           writeable=self.flags.writeable)


deflinear("diagonal", _diagonal,
          vjp={"self": lambda grad, self_shape, self_dtype, offset, dim1, dim2:
               embed(grad, self_shape, self_dtype, lambda z: z.diagonal(offset, dim1, dim2))},
          batch=over_dims("dim1", "dim2"), **V)
# alias, clone and to_dtype act on each element alike: the batch dim passes through
deflinear("alias", lambda self: self.view(), vjp={"self": lambda grad: grad},
          method=None, function=False, batch=elementwise, **V)


def _clone(self, memory_format=None):
    # torch's preserve_format: a dense input's strides are kept (the clone of a
    # transposed tensor is transposed: view(-1) refuses it), and one with gaps
    # keeps its order of dims; contiguous() asks for C order
    return preserved(self) if memory_format is None else self.copy()


deflinear("clone", _clone, vjp={"self": lambda grad: grad}, batch=elementwise)
deflinear("to_dtype", lambda self, dtype: preserved(self, dtype.np),
          vjp={"self": lambda grad: grad}, node="ToCopyBackward0", method=None, function=False,
          batch=elementwise)


@public()
def flatten(input, start_dim: int = 0, end_dim: int = -1):
    if input.ndim == 0:
        return reshape(input, 1)
    s, e = _norm_dim(start_dim, input.ndim), _norm_dim(end_dim, input.ndim)
    shape = tuple(input.shape)
    return reshape(input, shape[:s] + (math.prod(shape[s:e + 1]),) + shape[e + 1:])


@public()
def unflatten(input, dim: int, sizes):
    d = _norm_dim(dim, input.ndim)
    shape = tuple(input.shape)
    return reshape(input, shape[:d] + _infer(tuple(sizes), shape[d]) + shape[d + 1:])


@public()
def movedim(input, source, destination):
    """Move dims ``source`` to positions ``destination`` (a permute view)."""
    n = input.ndim
    src = [_norm_dim(d, n) for d in ([source] if isinstance(source, int) else source)]
    dst = [_norm_dim(d, n) for d in ([destination] if isinstance(destination, int) else destination)]
    order = [i for i in range(n) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute(input, *order)


def _is_contiguous(t) -> bool:
    from ..batching.batched import BatchedTensor
    if isinstance(t, BatchedTensor):
        # a C-contiguous physical tensor (batch outermost) holds contiguous
        # examples; otherwise a copy is the safe answer
        return _is_contiguous(t._value)
    return t._data.flags.c_contiguous


@public(function=False)
def is_contiguous(self, memory_format=None):
    """Whether ``self`` is in C order (as torch: dims of size 1 address nothing)."""
    return _is_contiguous(self)


@public(function=False)
def contiguous(self):
    return self if _is_contiguous(self) else call(OPS["clone"], self, "contiguous")


def _cat(tensors, dim=0):
    if not tensors:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    return np.concatenate(tensors, axis=dim)


def _cat_vjp(grad, tensors_shape, dim):
    pieces, offset = [], 0
    d = _norm_dim(dim, len(tensors_shape[0]))
    for shape in tensors_shape:
        pieces.append(grad.narrow(d, offset, shape[d]))
        offset += shape[d]
    return pieces


# cat and stack: the unbatched tensors are expanded to the batch (their gradient,
# through expand, is the sum over the batch, as for any unbatched input)
def _cat_rule(c):
    rank = item_rank(c, "tensors")
    return c.run(tensors=materialize_items(c, "tensors"), dim=shift_dim(c.env["dim"], rank))


def _stack_rule(c):
    rank = item_rank(c, "tensors") + 1      # the new dim may also be the last
    return c.run(tensors=materialize_items(c, "tensors"), dim=shift_dim(c.env["dim"], rank))


def _sequence_of(name: str):
    """A ``refuse`` check: torch takes a tuple or list of tensors here, never one
    tensor (NumPy would iterate its rows, and a batched one's batch)."""
    def check(tensors: dict) -> None:
        if not isinstance(tensors.get("tensors"), list):
            raise TypeError(f"{name}(): argument 'tensors' (position 1) must be tuple of "
                            f"Tensors, not {type(tensors.get('tensors')).__name__}")
    return check


deflinear("cat", _cat, vjp={"tensors": _cat_vjp}, inputs=("tensors",), promote=("tensors",),
          method=None, batch=_cat_rule, refuse=_sequence_of("cat"))
deflinear("stack", lambda tensors, dim=0: np.stack(tensors, axis=dim),
          vjp={"tensors": lambda grad, tensors_shape, dim:
               [grad.select(dim, i) for i in range(len(tensors_shape))]},
          inputs=("tensors",), promote=("tensors",), method=None, batch=_stack_rule,
          refuse=_sequence_of("stack"))


# ----- copying shape ops: tril triu flip roll repeat (tile, split, chunk, unbind composite)
def _tri(fn):
    def forward(self, diagonal=0):
        if self.ndim < 2:
            raise RuntimeError(f"{fn.__name__}: input tensor must have at least 2 dimensions")
        return fn(self, diagonal)
    return forward


deflinear("tril", _tri(np.tril), vjp={"self": lambda grad, diagonal: grad.tril(diagonal)},
          inplace=True, batch=matrices)
deflinear("triu", _tri(np.triu), vjp={"self": lambda grad, diagonal: grad.triu(diagonal)},
          inplace=True, batch=matrices)


def _dims_tuple(dims, ndim):
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    return tuple(_norm_dim(d, ndim) for d in dims)


def _flip_rule(c):
    dims, rank = c.env["dims"], c.rank("self")
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    return c.run(dims=tuple(shift_dim(d, rank) for d in dims))


def _roll_rule(c):
    shifts, dims = c.env["shifts"], c.env["dims"]
    if dims is not None:
        return c.run(dims=shift_dims(dims, c.rank("self")))
    if not isinstance(shifts, (int, np.integer)):
        raise NotBatchable("several shifts without dims")
    # dims=None rolls each example flattened: roll the rows of (batch, numel)
    x = c.env["self"]
    return c.run(self=x.reshape(c.size, -1), dims=1).reshape(x.shape)


deflinear("flip", lambda self, dims: np.flip(self, _dims_tuple(dims, self.ndim)).copy(),
          vjp={"self": lambda grad, dims: grad.flip(dims)}, batch=_flip_rule)
deflinear("roll", lambda self, shifts, dims=None: np.roll(self, shifts, dims),
          vjp={"self": lambda grad, shifts, dims: grad.roll(
              -shifts if isinstance(shifts, int) else tuple(-s for s in shifts), dims)},
          batch=_roll_rule)


def _repeat(self, repeats):
    if len(repeats) < self.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    return np.tile(self.reshape((1,) * (len(repeats) - self.ndim) + self.shape), repeats)


def _repeat_vjp(grad, self_shape, repeats):
    padded = (1,) * (len(repeats) - len(self_shape)) + tuple(self_shape)
    split = [n for r, s in zip(repeats, padded) for n in (r, s)]
    return grad.reshape(split).sum(list(range(0, 2 * len(repeats), 2))).reshape(self_shape)


def _repeat_rule(c):
    # size-1 dims after the batch dim stand for the leading dims repeat adds
    repeats = tuple(c.env["repeats"])
    if len(repeats) < c.rank("self"):
        raise NotBatchable("fewer repeats than dims: the loop raises repeat's error")
    return c.run(self=pad_to(c.env["self"], len(repeats)), repeats=(1,) + repeats)


deflinear("repeat", _repeat, vjp={"self": _repeat_vjp}, method=None, function=False,
          batch=_repeat_rule)


@public("repeat", function=False)
def repeat(self, *sizes):
    """The tensor tiled ``sizes`` times along each dim (leading dims added as needed)."""
    return call(OPS["repeat"], self, _shape_arg(sizes))


@public()
def tile(input, dims):
    """``repeat`` with ``dims`` padded with leading ones to the tensor's rank."""
    dims = _shape_arg((dims,) if isinstance(dims, int) else tuple(dims))
    return call(OPS["repeat"], input, (1,) * (input.ndim - len(dims)) + dims)
