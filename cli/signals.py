"""Stop signals: SIGTERM and SIGHUP end a run as Ctrl-C does.

CI systems cancel a job with SIGTERM (and a closed terminal sends SIGHUP);
both must leave the partial report, as Ctrl-C does. While a command runs
(``handled()``), each of SIGINT, SIGTERM and SIGHUP raises ``Stopped``, a
``KeyboardInterrupt``, so the runner and the commands treat all three as
one; the first one received decides the exit status (128 + its number:
130, 143, 129). After the first, and while a command writes its reports
(``defer()``), further signals are only noted, so a second Ctrl-C cannot
cut the partial report short (and the files are written atomically
besides).
"""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager

#: the signals that stop a run
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

_received: list = []


class Stopped(KeyboardInterrupt):
    """A stop signal arrived (``signum``)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise(signum, frame):
    _received.append(signum)
    defer()     # the first signal stops the run; the next ones must not stop the report
    raise Stopped(signum)


def _note(signum, frame):
    _received.append(signum)


@contextmanager
def handled():
    """Within the block, a stop signal raises ``Stopped``; handlers are restored
    after (only in the main thread, where Python delivers signals)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    del _received[:]
    previous = {number: signal.signal(number, _raise) for number in STOP_SIGNALS}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def defer() -> None:
    """From now on (until ``handled()`` ends) stop signals are noted, not raised."""
    if threading.current_thread() is threading.main_thread():
        for number in STOP_SIGNALS:
            if signal.getsignal(number) is _raise:
                signal.signal(number, _note)


def first() -> str | None:
    """The name of the first stop signal received (``"SIGTERM"``), or ``None``."""
    return signal.Signals(_received[0]).name if _received else None


def exit_status(name: str | None) -> int:
    """The exit status of a run stopped by ``name`` (130, Ctrl-C's, by default)."""
    from adcheck.runner.results import STOPPED_BY, ExitCode
    return int(STOPPED_BY.get(name or "SIGINT", ExitCode.INTERRUPTED))
