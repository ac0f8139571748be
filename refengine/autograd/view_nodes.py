"""In-place writes through views: ``CopySlices`` and regenerated view nodes.

When an in-place op modifies a view, the base's history is rebased: the
base's new ``grad_fn`` is a ``CopySlices`` that applies the in-place op's
backward to the viewed region, and every view of the base gets an
``AsStridedBackward0`` from the new base (seed 001, "In-place handling").
"""
from __future__ import annotations

from .node import Node


class CopySlices(Node):
    """Backward of a base whose region (``view_fn``) was written by ``fn``."""

    def __init__(self, base_edge, view_fn, fn: Node):
        super().__init__((base_edge,) + tuple(fn._next[1:]))
        self.view_fn = view_fn
        self.fn = fn

    def apply(self, grads: list) -> list:
        g = grads[0]
        if g is None:
            return [None] * len(self._next)
        result = g.clone()
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
        self.view_fn(full).copy_(g)
        return [full]


def _view_node(view):
    base = view._base
    return AsStridedBackward0(base._grad_edge(), view._view_fn, tuple(base.shape), base.dtype)


def regenerate_view_grad_fn(view) -> None:
    """Give a view of a rebased base a ``grad_fn`` that reads from the new base."""
    base = view._base
    view._view_rebase_id = base._rebase_id
    if base.requires_grad and view._view_fn is not None:
        if view._retains_grad and view._grad_fn is not None:
            view._grad_fn._drop_retains_grad(view)
        view._grad_fn = _view_node(view)
        view._output_nr = 0
        if view._retains_grad:
            view._grad_fn._set_retains_grad(view)


def rebase_after_inplace(t, node: Node, old: Node | None) -> None:
    """Make ``node`` (an in-place op's node, output ``t``) the history of ``t``."""
    base = t._base
    if base is None or t._view_fn is None:
        if t._retains_grad and old is not None:
            old._drop_retains_grad(t)
            node._set_retains_grad(t)
        t._rebase_id += 1
        return
    base._grad_fn = CopySlices(base._grad_edge(), t._view_fn, node)
    base._output_nr = 0
    base._rebase_id += 1
    regenerate_view_grad_fn(t)
