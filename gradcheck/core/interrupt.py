"""A timer that interrupts the code under check: ``interrupting(seconds, error)``.

In the main thread of a POSIX process an interval timer raises ``error()`` in
the block after ``seconds`` (a ``BaseException`` subclass, so that the code's
own ``except Exception`` does not swallow it); elsewhere (another thread,
Windows) the block runs unbounded. An explored point that hangs
(``gradcheck.explore.deadline``) and a task past its ``--timeout``
(``runner.deadline.deadline``) are stopped by it.

The timer may fire inside ``torch.func.vmap`` or another transform,
between the push of its level and the pop. The level then stays on torch's
dynamic layer stack, and every later call in the process behaves as if inside
that transform ("You are attempting to call Tensor.requires_grad_() ... inside
of a function being transformed"). ``kept_level`` undoes it, and
``kept_forward_state`` does the same for refengine's forward-AD levels.
"""
from __future__ import annotations

import contextlib
import signal
import sys
import threading


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


@contextlib.contextmanager
def kept_forward_state():
    """The block leaves refengine's forward-AD state (open and excluded levels) as
    it found it: a timer firing inside ``dual_level`` or ``excluding`` left level
    0 excluded, and every later refengine jvp of the process was zero (404
    forward checks of one ``adcheck ops --explore`` run: "analytical is zero")."""
    tangents = sys.modules.get("adcheck.refengine.autograd.tangents")
    if tangents is None:
        yield
        return
    before = tangents.forward_state()
    try:
        yield
    finally:
        tangents.restore_forward_state(before)


@contextlib.contextmanager
def interrupting(seconds: float, error):
    """Raise ``error()`` in the block after ``seconds`` where a timer can (see
    the module docstring); torch.func's transform stack is left as it was."""
    if not (seconds > 0 and hasattr(signal, "setitimer")
            and threading.current_thread() is threading.main_thread()):
        yield
        return

    def expire(signum, frame):
        raise error()
    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        with kept_level(), kept_forward_state():
            yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
