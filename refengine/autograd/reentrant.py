"""Reentrant backward: a backward called from inside a backward.

A custom Function's backward may itself call ``backward`` (checkpointing
does). Each level costs a dozen Python frames, so nesting on one thread
would stop at the interpreter's recursion limit (about 140 levels with the
default limit). PyTorch nests far deeper by running a deep reentrant
backward on another thread with a fresh stack; so does this module: when
the stack is more than half full, the nested pass runs on a new thread,
which starts with an empty stack and this thread's autograd state, while
this thread waits for it.
"""
from __future__ import annotations

import sys
import threading

from .. import grad_mode
from . import hooks, tangents


def stack_is_deep() -> bool:
    """Whether this thread's Python stack is more than half the recursion limit."""
    limit = sys.getrecursionlimit() // 2
    frame, depth = sys._getframe(), 0
    while frame is not None and depth <= limit:
        frame, depth = frame.f_back, depth + 1
    return depth > limit


def run_on_fresh_stack(fn) -> None:
    """Call ``fn()`` on a new thread that carries this thread's grad modes,
    saved-tensor hooks and forward-AD exclusions; wait, and re-raise what it raised."""
    state = _capture()
    failure = []

    def target():
        _restore(state)
        try:
            fn()
        except BaseException as exc:   # noqa: BLE001 - handed back to the caller
            failure.append(exc)
    worker = threading.Thread(target=target, name="refengine-reentrant-backward")
    worker.start()
    worker.join()
    if failure:
        raise failure[0]


def _capture() -> tuple:
    excluded = getattr(tangents._tls, "excluded", None)
    return (grad_mode._state.grad, grad_mode._state.inference,
            list(hooks._tls.stack or ()), hooks._tls.disabled,
            set(excluded) if excluded else None)


def _restore(state: tuple) -> None:
    grad, inference, stack, disabled, excluded = state
    grad_mode._state.grad, grad_mode._state.inference = grad, inference
    hooks._tls.stack, hooks._tls.disabled = stack, disabled
    if excluded:
        tangents._tls.excluded = excluded
