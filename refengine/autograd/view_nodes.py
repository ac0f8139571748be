"""In-place writes through views: ``CopySlices`` and regenerated view nodes.

When an in-place op modifies a view, the base's history is rebased: the
base's new ``grad_fn`` is a ``CopySlices`` that applies the in-place op's
backward to the viewed region, and every view of the base gets an
``AsStridedBackward0`` from the new base (seed 001, "In-place handling").
"""
from __future__ import annotations

from ..grad_mode import is_grad_enabled, is_inference_mode_enabled
from .node import Node
from .saved import _op_name as op_name


class CopySlices(Node):
    """Backward of a base whose region (``view_fn``) was written by ``fn``."""

    def __init__(self, base_edge, view_fn, fn: Node, base_c_order: bool = True):
        super().__init__((base_edge,) + tuple(fn._next[1:]))
        self.view_fn = view_fn
        self.fn = fn
        self.base_c_order = base_c_order

    def apply(self, grads: list) -> list:
        g = grads[0]
        if g is None:
            return [None] * len(self._next)
        # laid out as the base, as torch's CopySlices does, not as the gradient: the
        # view ops replayed on it (view(-1)) must find the strides they were made on
        # (a transposed gradient of a double backward refused view(-1))
        result = g.clone(memory_format="contiguous") if self.base_c_order else g.clone()
        region = self.view_fn(result)
        inner = self.fn.apply([region.clone()])
        if inner[0] is None:
            region.zero_()
        else:
            region.copy_(inner[0])
        return [result] + list(inner[1:])

    def _release(self) -> None:
        self.fn._release()


class AsStridedBackward0(Node):
    """Backward of a view regenerated from its (rebased) base."""

    def __init__(self, base_edge, view_fn, base_shape: tuple, base_dtype):
        super().__init__((base_edge,))
        self.view_fn = view_fn
        self.base_shape = base_shape
        self.base_dtype = base_dtype

    def apply(self, grads: list) -> list:
        from .. import creation
        g = grads[0]
        if g is None:
            return [None]
        full = creation.zeros(self.base_shape, dtype=self.base_dtype)
        view = self.view_fn(full)
        places = _storage_places(view, full)
        if places is None:
            view.copy_(g)
            return [full]
        # elements of the view that share memory (an expand) each add their
        # gradient to the one base element, as torch's as_strided backward does
        index = creation.tensor(places.reshape(-1))
        if view.dtype == full.dtype:
            flat = creation.zeros((full.numel(),),
                                  dtype=g.dtype if g.is_complex() else self.base_dtype)
            return [flat.index_add(0, index, g.reshape(-1)).reshape(self.base_shape)]
        # a real view of a complex base (``.real``, ``.imag``, ``view_as_real``):
        # places count its parts, two to each of the base's elements
        flat = creation.zeros((2 * full.numel(),), dtype=view.dtype)
        parts = flat.index_add(0, index, g.reshape(-1)).reshape(full.numel(), 2)
        return [parts.view_as_complex().reshape(self.base_shape)]


def _storage_places(view, full):
    """The flat index into ``full``'s memory, in elements of ``view``'s dtype
    (a real view of a complex base counts its parts), of each element of
    ``view`` when some elements share one place, else None (a plain copy is
    then right)."""
    import numpy as np
    v, f = view._data, full._data
    real_of_complex = f.dtype.kind == "c" and v.dtype.kind == "f" and \
        2 * v.itemsize == f.itemsize
    if v.size <= 1 or not f.flags.c_contiguous or (v.dtype != f.dtype and not real_of_complex):
        return None
    start = v.__array_interface__["data"][0] - f.__array_interface__["data"][0]
    offsets = np.full(v.shape, start, dtype=np.int64)
    for axis, stride in enumerate(v.strides):
        shape = [1] * v.ndim
        shape[axis] = v.shape[axis]
        offsets = offsets + (np.arange(v.shape[axis]) * stride).reshape(shape)
    places = offsets // v.itemsize
    return places if np.unique(places).size < places.size else None


class MultiViewBackward(Node):
    """The one node of ``split``, ``chunk`` and ``unbind``: output ``i`` is
    view ``i``; its backward joins the views' gradients (zeros for those
    that got none) into the input's."""

    def __init__(self, name: str, edge, join, metas: list, saved: dict):
        super().__init__((edge,))
        self._name = name
        self._join = join
        self._metas = metas            # (shape, dtype) of each view
        self._saved = saved            # what PyTorch shows as _saved_<name>
        self._num_outputs = len(metas)

    def name(self) -> str:
        return self._name

    def apply(self, grads: list) -> list:
        if all(g is None for g in grads):
            return [None]
        from .. import creation
        full = [g if g is not None else creation.zeros(shape, dtype=dt)
                for g, (shape, dt) in zip(grads, self._metas)]
        return [self._join(full)]


def multi_view(pieces: tuple, source, name: str, join, saved: dict) -> tuple:
    """Make ``pieces`` (views of ``source``) the outputs 0, 1, ... of one
    ``MultiViewBackward`` node when they were recorded, and mark them as one
    of several views, whose in-place writes PyTorch refuses."""
    from ..batching.batched import BatchedTensor
    physical = list(pieces)
    if isinstance(source, BatchedTensor):
        # under vmap the graph lives on the physical views, each with its own node
        for i, p in enumerate(physical):
            while isinstance(p, BatchedTensor):
                p = p._value
            physical[i] = p
    elif any(p._grad_fn is not None for p in pieces):
        node = MultiViewBackward(name, source._grad_edge(), join,
                                 [(p._data.shape, p.dtype) for p in pieces], saved)
        for i, p in enumerate(pieces):
            p._grad_fn, p._output_nr = node, i
    kind = inherit_kind(source._view_meta, creation_kind(multi=True))
    for p in physical:
        if p._base is not None:
            p._view_meta = kind
    return pieces


def _view_node(view):
    base = view._base
    return AsStridedBackward0(base._grad_edge(), view._view_fn, tuple(base.shape), base.dtype)


def regenerate_view_grad_fn(view, direct: bool = False) -> None:
    """Give a view of a modified base a ``grad_fn`` that reads from the base.

    PyTorch regenerates whenever the shared version counter moved since the
    view last synced, whoever wrote (a recorded op, no_grad, a detached
    alias). ``direct``: the view itself was just written by a recorded op,
    whose in-place check already ran.
    """
    base = view._base
    if not direct and view._view_meta is not None:
        raise RuntimeError(view_error(view, indirect=True))
    view._view_version = view._storage.version
    # a view that had a history keeps one (into nothing) when its base stopped
    # requiring grad (detach_()) and was written, as torch regenerates it
    if (base.requires_grad or view._grad_fn is not None) and view._view_fn is not None:
        if view._retains_grad and view._grad_fn is not None:
            view._grad_fn._drop_retains_grad(view)
        view._grad_fn = _view_node(view)
        view._output_nr = 0
        if view._retains_grad:
            view._grad_fn._set_retains_grad(view)


def rebase_after_inplace(t, node: Node, old: Node | None, inputs=()) -> None:
    """Make ``node`` (an in-place op's node, output ``t``) the history of ``t``.
    Views of t's memory among the op's ``inputs`` (whose edges were read after
    the write, with the history from before it) rebuild theirs when next read."""
    for view in inputs:
        if getattr(view, "_base", None) is not None and view is not t and \
                view._storage is t._storage:
            view._view_version = -1
    base = t._base
    if base is None or t._view_fn is None:
        if t._retains_grad and old is not None:
            old._drop_retains_grad(t)
            node._set_retains_grad(t)
        return
    if t._retains_grad and old is not None:
        old._drop_retains_grad(t)       # the view's retained grad follows its new history
    old_base_fn = base._grad_fn
    base._grad_fn = CopySlices(base._grad_edge(), t._view_fn, node,
                               bool(base._data.flags.c_contiguous))
    base._output_nr = 0
    if base._retains_grad and old_base_fn is not None:
        # the base's retained grad follows its new history, as torch's hooks do
        old_base_fn._drop_retains_grad(base)
        base._grad_fn._set_retains_grad(base)
    regenerate_view_grad_fn(t, direct=True)
    for saved in node.__dict__.get("_saved", {}).values():
        if getattr(saved, "_is_output", False) and t._grad_fn is not None:
            saved.follow_view(t)


# ----- views that may not be written in place (PyTorch's "creation meta") -----
# A view's ``_view_meta`` says how it was made when that forbids an in-place
# write with grad mode on; None is the default kind, which allows it.
NO_GRAD, INFERENCE, MULTI, CUSTOM = "no_grad", "inference", "multi", "custom"


def creation_kind(multi: bool):
    """The kind of a view made now: in inference mode, in no_grad mode, or
    as one of several outputs (``split``, ``chunk``, ``unbind``)."""
    if is_inference_mode_enabled():
        return INFERENCE
    if not is_grad_enabled():
        return NO_GRAD
    return MULTI if multi else None


def inherit_kind(previous, new):
    """The kind of a view of a view: an inference-mode origin stays; otherwise
    the newer restriction wins, and a default view keeps its source's."""
    if new is None or previous == INFERENCE:
        return previous
    return new


_ADVICE = {
    MULTI: "This view is the output of a function that returns multiple views. Such functions "
           "do not allow the output views to be modified inplace. You should replace the "
           "inplace operation by an out-of-place one.",
    NO_GRAD: "Given that this use case is ambiguous and error-prone, it is forbidden. You can "
             "clarify your code by moving both the view and the inplace either both inside the "
             "no_grad block (if you don't want the inplace to be tracked) or both outside (if "
             "you want the inplace to be tracked).",
    INFERENCE: "Given that this use case is ambiguous and error-prone, it is forbidden. You can "
               "clarify your code by moving both the view and the inplace either both inside "
               "the inference_mode block (if you don't want the inplace to be tracked) or both "
               "outside (if you want the inplace to be tracked).",
    CUSTOM: "This view was created inside a custom Function (or because an input was returned "
            "as-is) and the autograd logic to handle view+inplace would override the custom "
            "backward associated with the custom Function, leading to incorrect gradients. "
            "This behavior is forbidden. You can fix this by cloning the output of the custom "
            "Function.",
}


def view_error(view, indirect: bool) -> str:
    """PyTorch's words for an in-place write to (or, ``indirect``, through the
    base of) a view whose kind forbids it."""
    kind, fn = view._view_meta, view._grad_fn
    written = ("its base or another view of its base has been" if indirect else "is being")
    where = f"Output {view._output_nr} of {op_name(fn.name())}" if fn is not None else ""
    if kind in (NO_GRAD, INFERENCE) or fn is None:
        prefix = f"{where} is a view of a view which was created in" if fn is not None \
            else "A view was created in"
        if kind == INFERENCE:
            head = f"{prefix} inference mode and {written} modified inplace in normal mode."
        else:
            head = f"{prefix} no_grad mode and {written} modified inplace with grad mode enabled."
    else:
        head = f"{where} is a view and {written} modified inplace."
    return f"{head} {_ADVICE[kind]}"


def check_view_inplace(view) -> None:
    """Refuse a recorded in-place write to a view whose kind forbids it."""
    if view._view_meta is not None:
        raise RuntimeError(view_error(view, indirect=False))
