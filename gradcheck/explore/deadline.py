"""A hard stop for one explored point: ``deadline(seconds)``.

A function may hang at a point the catalogue builds (a loop that never
converges at 1e300). In the main thread of a POSIX process an interval
timer interrupts it with ``Timeout``, a ``BaseException`` so that the
function's own ``except Exception`` does not swallow it; elsewhere (another
thread, Windows) the point runs unbounded and the budget is checked between
points.
"""
from __future__ import annotations

import contextlib
import signal
import threading

from adcheck.gradcheck.engines.transforms import kept_level


class Timeout(BaseException):
    """An explored point ran past its time."""


def _interrupt(signum, frame):
    raise Timeout()


@contextlib.contextmanager
def deadline(seconds: float):
    """Raise ``Timeout`` in the body after ``seconds`` (see the module docstring)."""
    usable = (hasattr(signal, "setitimer") and seconds > 0
              and threading.current_thread() is threading.main_thread())
    if not usable:
        yield
        return
    previous = signal.signal(signal.SIGALRM, _interrupt)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        with kept_level():      # an interrupted torch.func transform is popped
            yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
