"""The refengine Tensor: a NumPy array plus autograd and forward-AD state.

Operations are not defined here: every op is defined once in ``ops/`` and
attached to ``Tensor`` as a method (and in-place variant) from there.
"""
from __future__ import annotations

import weakref
from types import MappingProxyType

import numpy as np

from . import dtypes
from .grad_mode import _state as _MODES
from .grad_mode import is_inference_mode_enabled
from .storage import Storage

_BY_NP = dtypes._BY_NP    # NumPy dtype -> refengine dtype, read on every .dtype
_new = object.__new__


def wrap_array(array: np.ndarray) -> "Tensor":
    """A new tensor owning ``array``: ``Tensor(_array=array)`` for the dispatcher.

    It sets what ``__init__`` sets for that call, without the keyword-argument
    handling: an op on a small array spends a noticeable part of its time
    making its result.
    """
    t = _new(Tensor)
    t._data = array
    # Storage(array) without its __init__ frame (it sets these two slots)
    t._storage = storage = _new(Storage)
    storage.array, storage.version = array, 0
    t._fw_grads = {}
    t._is_inference = _MODES.inference   # (is_inference_mode_enabled() without its frame)
    return t


class Tensor:
    """A multi-dimensional array that records the operations applied to it.

    Create one with :func:`refengine.tensor` or the other creation functions::

        >>> x = refengine.tensor([1., 2.], requires_grad=True)
        >>> (x * x).sum().backward(); x.grad
        tensor([2., 4.])
    """

    __array_priority__ = 1000  # NumPy defers to our operators

    # Per-tensor state that starts the same for every tensor is read from
    # these class attributes until a tensor sets its own: every op result is
    # a new Tensor, and assigning all of them in __init__ was a measurable
    # part of an op on a small array. Only immutable values live here.
    _base = None                 # the root tensor this one is a view of
    _view_fn = None              # base -> this view, for regeneration
    _view_version = 0            # the version our grad_fn last synced to (views)
    _requires_grad = False
    _grad_fn = None
    _output_nr = 0
    _grad = None
    _grad_accumulator = None
    _retains_grad = False
    # Forward-mode view tracking is separate from backward's (the design
    # note): make_dual/unpack_dual results are backward views but forward
    # roots, so they never read a tangent through their base.
    _fw_base = None
    _fw_view_fn = None
    _wrapped_number = None       # dtype of the Python number this wraps
    _view_meta = None            # why in-place on this view is forbidden, if it is
    _geometry_log = None         # undos of in-place view ops on this base (t_, squeeze_...)
    _replay_barrier = None       # the version an in-place as_strided_ of this base made
    _post_acc_hooks = MappingProxyType({})   # read-only until a hook is registered

    def __init__(self, data=None, *, _array=None, _storage=None, _base=None):
        if _array is None:
            from .creation import _as_array
            _array = _as_array([] if data is None else data, None)
        self._data = _array
        self._storage = _storage if _storage is not None else Storage(_array)
        if _base is not None:
            self._base = _base
        self._fw_grads = {}              # dual level -> tangent (shared with saved outputs)
        self._is_inference = _MODES.inference

    # ----- data and shape ------------------------------------------------
    @property
    def dtype(self) -> dtypes.dtype:
        d = _BY_NP.get(self._data.dtype)
        return d if d is not None else dtypes.from_numpy_dtype(self._data.dtype)

    @property
    def shape(self) -> tuple:
        return Size(self._data.shape)

    def size(self, dim: int | None = None):
        return self.shape if dim is None else self._data.shape[dim]

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return int(self._data.size)

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def is_complex(self) -> bool:
        return self.dtype.is_complex

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The NumPy array sharing this tensor's memory.

        Refused for a tensor that requires grad while grad mode is on (the
        array would escape autograd); ``force=True`` returns it anyway.
        """
        if not force and _MODES.grad and self.requires_grad:   # (is_grad_enabled())
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. "
                               "Use tensor.detach().numpy() instead.")
        return self._data

    def item(self):
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be "
                               "converted to Scalar")
        return self._data.reshape(()).item()

    def tolist(self):
        return self._data.tolist()

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __complex__(self):
        return complex(self.item())

    def __bool__(self):
        if self._data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self._data.reshape(()).item())

    def __index__(self):
        if self.dtype._category > 1 or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __array__(self, dtype=None, copy=None):
        return self._data if dtype is None else self._data.astype(dtype)

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    def __hash__(self):
        return id(self)

    def __repr__(self) -> str:
        from .tensor_format import format_tensor
        return format_tensor(self)

    @property
    def _version(self) -> int:
        if self._is_inference:
            raise RuntimeError("Inference tensors do not track version counter: "
                               "their in-place writes are never checked by autograd.")
        return self._storage.version

    def _bump_version(self) -> None:
        self._storage.bump()

    def _is_view(self) -> bool:
        return self._base is not None

    def is_inference(self) -> bool:
        return self._is_inference

    def data_ptr(self) -> int:
        return self._data.__array_interface__["data"][0]

    def untyped_storage(self):
        return self._storage

    def is_set_to(self, tensor) -> bool:
        """Whether ``tensor`` is the same memory: storage, offset, size and stride."""
        return (getattr(tensor, "_storage", None) is self._storage
                and tensor.data_ptr() == self.data_ptr() and tensor.shape == self.shape
                and tensor._data.strides == self._data.strides)

    # ----- autograd state ------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        if self._requires_grad or self._grad_fn is not None:
            return True
        # a view needs a gradient when its base does, even one made in no_grad or
        # inference mode or before the base required grad (as in PyTorch): ops on
        # it are recorded, and the gradient stops at it. A view of an inference
        # tensor is not one autograd knows of (torch gives it no view metadata)
        base = self._base
        return base is not None and not self._is_inference and base.requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        # PyTorch's attribute is stricter than its method: any change on a
        # non-leaf is refused, and only a bool is accepted
        if type(value) is not bool:
            raise RuntimeError("requires_grad must be a bool")
        if value and self.grad_fn is not None:
            raise RuntimeError("you can only change requires_grad flags of leaf variables.")
        self._set_requires_grad(value, "only Tensors of floating point and complex dtype can "
                                       "require gradients")

    @requires_grad.deleter
    def requires_grad(self) -> None:
        raise RuntimeError("requires_grad must be a bool")

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        """Set whether autograd records operations on this leaf; returns ``self``."""
        if type(requires_grad) is not bool:
            raise TypeError(f"requires_grad_(): argument 'requires_grad' (position 1) must be "
                            f"bool, not {type(requires_grad).__name__}")
        self._set_requires_grad(requires_grad, "only Tensors of floating point dtype can "
                                               "require gradients")
        return self

    def _set_requires_grad(self, requires_grad: bool, refusal: str) -> None:
        # ``refusal``: PyTorch's method, attribute and factories word the
        # error for an integer tensor each in their own way
        # the recorded grad_fn only, as torch's is_leaf in C++: a view whose base was
        # written since is not asked for its history (a no_grad or inference view's
        # would raise), so it counts as a leaf until its grad_fn is read
        if self._grad_fn is not None:
            if not requires_grad:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables. If you want "
                    "to use a computed variable in a subgraph that doesn't require "
                    "differentiation use var_no_grad = var.detach().")
            return
        if requires_grad and not (self.dtype.is_floating_point or self.dtype.is_complex):
            raise RuntimeError(refusal)
        if requires_grad and self._is_inference and not is_inference_mode_enabled():
            raise RuntimeError("Setting requires_grad=True on inference tensor outside "
                               "InferenceMode is not allowed.")
        self._requires_grad = requires_grad

    @property
    def grad_fn(self):
        base = self._base
        if (base is not None and self._view_version != self._storage.version
                and (self._grad_fn is not None or base.requires_grad)
                and not self._is_inference):
            if self._view_version + 1 == base._replay_barrier == self._storage.version:
                # the one write since was an in-place as_strided_ of the base, which
                # has no inverse to replay: this view's history is still right
                self._view_version = self._storage.version
            else:
                from .autograd.view_nodes import regenerate_view_grad_fn
                regenerate_view_grad_fn(self)
        return self._grad_fn

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def output_nr(self) -> int:
        return self._output_nr

    @property
    def grad(self):
        if self._grad is None and not self._retains_grad and self._has_history():
            import warnings
            warnings.warn("The .grad attribute of a Tensor that is not a leaf Tensor is being "
                          "accessed. Its .grad attribute won't be populated during "
                          "autograd.backward(). Call .retain_grad() on the non-leaf Tensor "
                          "if you want its gradient.", UserWarning, stacklevel=2)
        return self._grad

    def _has_history(self) -> bool:
        # reading .grad never raises in PyTorch, nor warns, even where grad_fn
        # would raise (a view whose kind forbids regenerating its node after an
        # in-place write to its base)
        try:
            return self.grad_fn is not None
        except RuntimeError:
            return False

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got "
                                f"grad of type {type(value).__name__}")
            if tuple(value.shape) != tuple(self.shape):
                raise RuntimeError(f"attempting to assign a gradient of size "
                                   f"'{list(value.shape)}' to a tensor of size "
                                   f"'{list(self.shape)}': assign a gradient of the same size")
            if value.dtype is not self.dtype:
                raise RuntimeError(f"attempting to assign a gradient with dtype "
                                   f"'{value.dtype.name}' to a tensor with dtype "
                                   f"'{self.dtype.name}': cast the gradient to the tensor's dtype")
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    def retain_grad(self) -> None:
        """Populate ``.grad`` for this non-leaf tensor during backward."""
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is None or self._retains_grad:
            return
        self._retains_grad = True
        self.grad_fn._set_retains_grad(self)

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    def _grad_edge(self):
        """The (node, input number) a gradient for this tensor flows into.

        Its node is None exactly when the tensor does not require grad.
        """
        fn = self._grad_fn if self._base is None else self.grad_fn
        if fn is not None:
            return (fn, self._output_nr)
        if self._requires_grad:
            acc = self._grad_accumulator
            return (acc if acc is not None else self._get_grad_accumulator(), 0)
        return (None, 0)

    def _get_grad_accumulator(self):
        if self._grad_accumulator is None:
            from .autograd.node import AccumulateGrad
            self._grad_accumulator = AccumulateGrad(self)
            kept = self.__dict__.pop("_hooks_kept", None)
            if kept is not None:    # the tensor hooks of a history detach_() cut
                self._grad_accumulator._own("_tensor_hooks")[0] = kept
        return self._grad_accumulator

    def _hook_edge(self):
        """The (node, input number) this tensor's hooks go to.

        As torch's ``Tensor.register_hook``, which reads ``grad_fn`` only at a
        tensor's first hook: later hooks join the node the tensor had then,
        until its ``grad_fn`` changes (an in-place op on it, a view's history
        regenerated when read), without reading it again (which, for a view of
        a written base, could raise or regenerate it). torch keeps the hooks'
        dict from before that read: when the read raises, later hooks join a
        dict no node calls.
        """
        kept = self.__dict__.get("_hooks_at")
        fn = self._grad_fn
        # weakly: a node the tensor has left must not be kept alive by it
        if kept is not None and (kept[0] is None if fn is None
                                 else kept[0] is not None and kept[0]() is fn):
            node = kept[1]() if kept[1] is not None else None
            return (node, kept[2]) if node is not None else (None, 0)
        self.__dict__["_hooks_at"] = (weakref.ref(fn) if fn is not None else None, None, 0)
        node, nr = self._grad_edge()
        fn = self._grad_fn      # a view's history may have been regenerated
        self.__dict__["_hooks_at"] = (weakref.ref(fn) if fn is not None else None,
                                      weakref.ref(node) if node is not None else None, nr)
        return node, nr

    def register_hook(self, hook):
        """Call ``hook(grad)`` when this tensor's gradient is computed.

        The hook may return a new gradient to use in its place. It stays bound
        to the ``grad_fn`` the tensor has now (see the seed, "Behavior of
        Tensor hooks when Tensor is modified in-place").
        """
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        node, nr = self._hook_edge()
        if node is None:
            # a view that requires grad through its base but is not in the
            # graph (made in no_grad mode, or before its base required grad):
            # PyTorch accepts the hook, and no gradient ever reaches it
            from .autograd.hooks import RemovableHandle
            return RemovableHandle.add({}, hook)
        return node._register_tensor_hook(nr, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """Call ``hook(tensor)`` after ``.grad`` of this leaf has been accumulated."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        from .autograd.hooks import RemovableHandle
        return RemovableHandle.add(self.__dict__.setdefault("_post_acc_hooks", {}), hook)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate the gradient of this tensor into the ``.grad`` of the leaves."""
        from .autograd.api import backward
        backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    # ----- detaching ---------------------------------------------------
    def detach(self) -> "Tensor":
        """A tensor sharing storage and version counter, cut from the graph."""
        out = Tensor(_array=self._data, _storage=self._storage)
        out._is_inference = self._is_inference
        return out

    def detach_(self) -> "Tensor":
        if is_inference_mode_enabled():
            return self     # as in PyTorch: inference mode skips autograd, detach_ included
        if self._base is not None and not self._is_inference:   # no autograd view, as torch's
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead. If you are using "
                "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set "
                "as True, gradients are views of DDP buckets, and hence detach_() cannot be "
                "called on these gradients. To fix this error, please refer to the "
                "Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution.")
        self._fw_grads = {}         # forward-mode tangents go too, as in PyTorch
        if self._grad_fn is not None:
            # torch keeps the tensor's hooks (the dict its grad_fn calls, shared): the
            # leaf it may become again (requires_grad_()) calls them, and later ones
            hooks = self._grad_fn._tensor_hooks.get(self._output_nr)
            if hooks:
                self.__dict__["_hooks_kept"] = hooks
        self._grad_fn = None
        self._requires_grad = False
        self._output_nr = 0
        return self

    @property
    def data(self) -> "Tensor":
        """The same memory with a fresh version counter: writes are not recorded."""
        out = Tensor(_array=self._data, _storage=Storage(self._data))
        out._is_inference = self._is_inference
        return out

    @data.setter
    def data(self, value: "Tensor") -> None:
        # As in PyTorch: the memory (and dtype and shape) become value's, the
        # version counter stays this tensor's, still shared with its views.
        # Storage.array keeps the old memory: nothing reads it through a tensor.
        if not isinstance(value, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(value).__name__}")
        if self.requires_grad and not (value.dtype.is_floating_point or value.dtype.is_complex):
            raise RuntimeError("data set to a tensor that requires gradients must be floating "
                               "point or complex dtype")
        self._data = value._data
        self._is_inference = value._is_inference

    @data.deleter
    def data(self) -> None:
        raise RuntimeError("Deleting tensor data is not allowed. Delete tensor instead!")


class Size(tuple):
    """A tensor's shape: a tuple that prints as ``refengine.Size([2, 3])``."""

    def __repr__(self) -> str:
        return f"refengine.Size({list(self)})"

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n
