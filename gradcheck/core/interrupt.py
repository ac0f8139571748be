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
``kept_forward_state`` does the same for refengine's forward-AD levels. A
timer that fires inside a context manager's ``__enter__`` or ``__exit__`` is
raised at the next call after it (``_switching``): raised there, the context
was left half entered, to be undone later by whatever freed it.
"""
from __future__ import annotations

import contextlib
import gc
import signal
import sys
import threading
import time
import weakref


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


class Alarm:
    """What ``interrupting`` yields: ``expired`` once its time ran out in the
    block (an ``error()`` that the code under check caught, or wrapped in an
    error of its own as ``jax.pure_callback`` does, is still a timeout)."""

    expired = False
    #: ``(the profile function before,)`` while ``_raise_outside`` waits for a call
    profiler = None


#: seconds between the timer's repeats after it first fires, until the block
#: ends: a fallback should an ``error()`` be lost after all
AGAIN = 0.1


def _swallowing(frame) -> bool:
    """Whether ``frame`` runs in code whose exceptions Python prints and drops: a
    garbage-collection callback (JAX runs one after every collection), a
    finalizer, a ``__del__``, and the unraisable hook that formats what they
    dropped (pytest's: raised there, it failed the test run's hook). A timer's
    ``error()`` raised there was lost, and the block ran on past its time (a
    quick pass's 5 s point ran 240 s)."""
    codes = {getattr(callback, "__code__", None) for callback in gc.callbacks}
    codes.add(weakref.finalize.__call__.__code__)
    # (and the hook that then formats what they dropped: pytest's, in a test run)
    codes.add(getattr(sys.unraisablehook, "__code__", None))
    for _ in range(32):
        if frame is None:
            return False
        if frame.f_code in codes or frame.f_code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


#: the interrupted frame and its callers looked at for a context manager's entry or
#: exit: those that hold its own code (a generator's body before its ``yield``,
#: what that calls: torch's vmap entry is 5 frames below its ``__enter__``); a
#: block whose ``__enter__`` runs long loops further down is still interrupted there
WITHIN = 10
_ENTRY_AND_EXIT = frozenset(("__enter__", "__exit__", "__aenter__", "__aexit__"))


def _switching(frame) -> bool:
    """Whether ``frame`` runs a context manager's ``__enter__`` or ``__exit__``
    (or code that one calls, a few frames down). An exception raised there leaves
    the context half entered, and its ``__exit__`` is never run: torch's
    ``temporarily_pop_interpreter_stack`` (a custom Function under vmap) popped
    torch.func's layer on entry and, interrupted before its ``yield``, pushed it
    back when its suspended generator was freed, after the check ended. Every
    later test of that CI worker (277) then ran inside a vmap."""
    for _ in range(WITHIN):
        if frame is None:
            return False
        if frame.f_code.co_name in _ENTRY_AND_EXIT:
            return True
        frame = frame.f_back
    return False


def _raise_outside(error, alarm) -> None:
    """Raise ``error()`` at the next call made outside such code, and outside a
    context manager's entry or exit (``_switching``) (a profile
    function's exception propagates into the code it profiles; the profiler
    that was there, cProfile's say, is put back when the block ends). A loop
    that calls nothing outside it runs on until the block's end."""
    if alarm.profiler is not None:
        return   # (asked already)
    alarm.profiler = (sys.getprofile(),)

    def profile(frame, event, arg):
        if event in ("call", "c_call") and not _swallowing(frame) and not _switching(frame):
            raise error()   # (Python unsets a profiler that raises; the block's end puts back)
    sys.setprofile(profile)


def _put_back_profiler(alarm) -> None:
    if alarm.profiler is not None:
        sys.setprofile(alarm.profiler[0])
        alarm.profiler = None


@contextlib.contextmanager
def interrupting(seconds: float, error):
    """Raise ``error()`` in the block after ``seconds`` where a timer can, and
    again every ``AGAIN`` seconds until the block ends (see the module
    docstring); yields an ``Alarm``. Inside another such block (an explored
    point's deadline inside a task's ``--timeout``) the outer one's time still
    counts: its error is raised if its time runs out first, and its timer runs
    on afterwards (the inner block's end cancelled it, and a task that had
    explored a point had no timeout left but its worker's kill). torch.func's
    transform stack is left as it was."""
    alarm = Alarm()
    if not (seconds > 0 and hasattr(signal, "setitimer")
            and threading.current_thread() is threading.main_thread()):
        yield alarm
        return
    armed, outer_fired = [True], [False]
    outer_left, outer_again = signal.getitimer(signal.ITIMER_REAL)
    outer_at = time.monotonic() + outer_left if outer_left > 0 else None

    def expire(signum, frame):
        if outer_at is not None and time.monotonic() >= outer_at and callable(previous):
            outer_fired[0] = True
            return previous(signum, frame)   # (the outer block's time ran out first)
        if not armed[0]:
            return
        alarm.expired = True
        if _swallowing(frame) or _switching(frame):
            _raise_outside(error, alarm)
            return
        raise error()
    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL,
                     seconds if outer_at is None else min(seconds, outer_left), AGAIN)
    try:
        with kept_level(), kept_forward_state():
            try:
                yield alarm
            finally:   # (disarmed before the levels are put back: no repeat interrupts that)
                armed[0] = False
                signal.setitimer(signal.ITIMER_REAL, 0)
                _put_back_profiler(alarm)   # (a raise outside a finalizer not reached)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer_at is not None and not outer_fired[0]:
            signal.setitimer(signal.ITIMER_REAL, max(outer_at - time.monotonic(), 1e-3),
                             outer_again)
