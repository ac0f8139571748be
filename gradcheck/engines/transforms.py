"""torch.func's transform levels, put back after an interruption.

A timer that interrupts a function (an explored point that hangs, a task past
its ``--timeout``) may fire inside ``torch.func.vmap`` or another transform,
between the push of its level and the pop. The level then stays on torch's
dynamic layer stack, and every later call in the process behaves as if inside
that transform ("You are attempting to call Tensor.requires_grad_() ... inside
of a function being transformed"). ``kept_level`` undoes it.
"""
from __future__ import annotations

import contextlib
import sys


def _depth() -> int | None:
    torch = sys.modules.get("torch")     # no torch imported: nothing to put back
    functorch = getattr(getattr(torch, "_C", None), "_functorch", None)
    depth = getattr(functorch, "get_dynamic_layer_stack_depth", None)
    return None if depth is None else depth()


@contextlib.contextmanager
def kept_level():
    """The block leaves torch.func's transform stack as deep as it found it,
    however it ends (an interrupted transform's levels are popped)."""
    before = _depth()
    try:
        yield
    finally:
        after = _depth()
        if before is not None and after is not None and after > before:
            sys.modules["torch"]._C._functorch.pop_dynamic_layer_stack_and_undo_to_depth(before)
