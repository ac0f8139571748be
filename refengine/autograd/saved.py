"""SavedTensor: a tensor kept for backward, checked against its version."""
from __future__ import annotations

import threading
import weakref

from .. import dtypes
from ..grad_mode import _state as _MODES
from ..tensor import Tensor
from .hooks import current_saved_hooks

SECOND_TIME = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward.")


FREED_HOOKS = (
    "Calling register_hooks on a saved tensor after it has been freed. Saved intermediate "
    "values of the graph are freed when you call .backward() or autograd.grad(). Specify "
    "retain_graph=True if you need to backward through the graph a second time or if you need "
    "to access saved variables after calling backward.")


def _pack(pack_hook, tensor):
    version = tensor._version
    packed = pack_hook(tensor)
    if tensor._version != version:
        raise RuntimeError(
            "A saved tensor pack hook is modifying its input in place. Tensors provided as "
            "input to pack hook cannot be modified by in-place operations as this can lead to "
            "unexpected side-effects. Please open an issue if you need to perform in-place "
            "operations on the input to a pack hook.")
    return packed


def _op_name(node_name: str) -> str:
    """``MulBackward0`` -> ``Mul``, ``TBackward1`` -> ``T1``: how PyTorch names
    the op in version errors."""
    stem = node_name.rstrip("0123456789")
    if not stem.endswith("Backward"):
        return node_name
    number = node_name[len(stem):]
    return stem[: -len("Backward")] + (number if number != "0" else "")


def describe(t) -> str:
    return _describe(t.dtype, t.shape)


def _describe(dtype, shape) -> str:
    # torch has no legacy tensor type for complex dtypes: it names the backend's type
    name = (f"CPU{dtypes.SCALAR_NAMES[dtype]}Type" if dtype.is_complex
            else f"refengine.{dtypes.TYPE_NAMES[dtype]}")
    return f"[{name} [{', '.join(map(str, shape))}]]"


DETACHED = ("Trying to use a saved tensor that has been detached in-place, i.e. with .detach_()."
            "This is not supported, please use out-of-place `.detach()` instead")


INFERENCE_SAVED = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in "
    "inference mode in computation tracked by autograd. To work around this, you can make a "
    "clone to get a normal tensor and use it in autograd, or use `refengine.no_grad()` instead "
    "of `refengine.inference_mode()`.")


class SavedTensor:
    """One tensor saved by a node (``grad_fn._raw_saved_<name>``)."""

    # the state of most saved tensors, until set otherwise (one is made for
    # every tensor a recorded op saves)
    _released = False
    _tensor = _data = _packed = None
    _node = _edge = _fw_grads = _view_fn = None

    def __init__(self, tensor, node, is_output: bool, version: int | None = None):
        if tensor._is_inference and not _MODES.inference:   # (is_inference_mode_enabled())
            raise RuntimeError(INFERENCE_SAVED)
        self._lock = threading.Lock()
        storage = self._storage = tensor._storage
        # an input saved by an in-place op that writes into it was saved
        # before the write: it records the version from before (``version``)
        self._version = storage.version if version is None else version
        self._is_output = is_output
        # for the error message, formatted only if it is ever needed
        self._described = (tensor._data.dtype, tensor._data.shape)   # (NumPy's dtype: no frame)
        nr = self._output_nr = tensor._output_nr
        # what is needed to give an unpacked tensor its autograd identity
        self._requires_grad = tensor._requires_grad
        # a Python number wrapped as a tensor is saved without the hooks (as PyTorch)
        hooks = self._hooks = current_saved_hooks() if tensor._wrapped_number is None else None
        if is_output:
            self._node = weakref.ref(node)
            self._producer = (node.name(), nr)
            if hooks is None:
                self._data = tensor._data    # no reference to the output: no cycle
            # the output's tangents (a shared dict: tangents set later are
            # seen), so forward-over-reverse through a saved result works
            self._fw_grads = tensor._fw_grads
        else:
            # (the property's regeneration concerns views only: a frame less for the rest)
            grad_fn = tensor._grad_fn if tensor._base is None else tensor.grad_fn
            self._producer = None if grad_fn is None else (grad_fn.name(), nr)
            acc = None
            if grad_fn is None and tensor._requires_grad:   # a leaf: its accumulator, read
                acc = tensor._grad_accumulator              # without a frame once it is made
                if acc is None:
                    acc = tensor._get_grad_accumulator()
            self._edge = (grad_fn, nr, acc)
            if hooks is None:
                self._tensor = tensor
        if hooks is not None:
            self._packed = _pack(hooks[0], tensor)

    def _check(self) -> None:
        if self._released:
            raise RuntimeError(SECOND_TIME)
        current = self._storage.version
        if current != self._version:
            producer = self._producer
            if self._tensor is not None:
                # torch names the saved input's grad_fn as it is now (an in-place
                # op since has replaced it), with the output number from the save
                fn = self._tensor.grad_fn
                producer = None if fn is None else (fn.name(), self._output_nr)
            where = (f", which is output {producer[1]} of {_op_name(producer[0])},"
                     if producer else "")
            np_dtype, shape = self._described
            desc = _describe(dtypes.from_numpy_dtype(np_dtype), shape)
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: {desc}{where} is at version {current}; expected "
                f"version {self._version} instead. Hint: the tensor was changed in place after "
                "an operation saved it for backward; clone() it before the in-place operation.")

    def unpack(self):
        """The saved tensor, connected to the graph for double backward."""
        with self._lock:
            if not self._released and self._tensor is not None:
                # torch reads a saved input's grad_fn at each unpack: a view of a base
                # written since regenerates it, or raises for a no_grad or inference view
                self._tensor.grad_fn
            if not self._released and self._tensor is not None and self._edge[0] is not None \
                    and self._tensor._grad_fn is None:
                # saved with a history that detach_() has since cut (torch checks this first)
                raise RuntimeError(DETACHED)
            self._check()
            if self._hooks is not None:
                value = self._hooks[1](self._packed)
                return self._rewrap(value)
            if self._is_output:
                return self._rewrap(None)
            return self._tensor

    def follow_view(self, view) -> None:
        """The output of an in-place op on ``view``, saved by the op: its history
        is the view's grad_fn after the write (through the base's CopySlices),
        not the op's node, as torch's saved output of an in-place op on a view.
        Held weakly, as torch does: once the view is gone, the op's node."""
        self._view_fn = (weakref.ref(view._grad_fn), view._output_nr)

    def _rewrap(self, value):
        if value is not None and not isinstance(value, Tensor):
            raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor but "
                            f"got result of type {type(value).__name__}")
        data = self._data if value is None else value._data
        out = Tensor(_array=data, _storage=self._storage if value is None else value._storage)
        if self._is_output:
            view_fn = self._view_fn[0]() if self._view_fn is not None else None
            out._grad_fn, out._output_nr = ((view_fn, self._view_fn[1]) if view_fn is not None
                                            else (self._node(), self._output_nr))
            out._fw_grads = self._fw_grads
        else:
            fn, nr, acc = self._edge
            out._grad_fn, out._output_nr = fn, nr
            out._requires_grad = self._requires_grad
            out._grad_accumulator = acc
        return out

    def register_hooks(self, pack_hook, unpack_hook) -> None:
        """Install a pack/unpack pair: pack runs now, unpack at every access."""
        if not callable(pack_hook) or not callable(unpack_hook):
            raise TypeError("register_hooks expects two callables (pack_hook, unpack_hook)")
        with self._lock:
            if self._released:
                raise RuntimeError(FREED_HOOKS)
            if self._hooks is not None:
                raise RuntimeError("SavedTensor hooks have already been set; they cannot be set twice")
        current = self.unpack()
        with self._lock:
            self._packed = _pack(pack_hook, current)
            self._hooks = (pack_hook, unpack_hook)
            self._tensor = self._data = None

    def release(self) -> None:
        with self._lock:
            self._released = True
            self._tensor = self._data = None
            self._packed = None


class SavedTuple:
    """A saved argument holding tensors among other values (an index such as
    ``(slice(None), idx)``): each tensor in it is a ``SavedTensor``, so it is
    checked, packed and freed like any saved tensor."""

    __slots__ = ("items",)

    def __init__(self, items: tuple):
        self.items = items

    def unpack(self) -> tuple:
        return tuple(i.unpack() if isinstance(i, SavedTensor) else i for i in self.items)

    def release(self) -> None:
        for i in self.items:
            if isinstance(i, SavedTensor):
                i.release()


SAVED = (SavedTensor, SavedTuple)


def save_argument(value, node):
    """What a node keeps of a non-tensor argument a rule asks for: tensors
    inside it become saved tensors; anything else is kept as it is."""
    if isinstance(value, Tensor):
        return SavedTensor(value, node, is_output=False)
    if isinstance(value, tuple) and any(isinstance(v, Tensor) for v in value):
        return SavedTuple(tuple(SavedTensor(v, node, is_output=False) if isinstance(v, Tensor)
                                else v for v in value))
    return value
