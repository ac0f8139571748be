"""The first stop signal a run receives decides its exit status; the ones after
it are only noted (``cli.signals``), whatever their kind."""
import os
import signal
import time

import pytest

from adcheck.cli import signals


def _deliver(number: int) -> None:
    """Send ``number`` to this process and give Python the moment it needs to run
    the handler (handlers run between bytecodes of the main thread)."""
    os.kill(os.getpid(), number)
    for _ in range(100):
        time.sleep(0.001)


ORDERS = [("SIGTERM", "SIGINT", 143), ("SIGINT", "SIGTERM", 130), ("SIGHUP", "SIGTERM", 129),
          ("SIGTERM", "SIGHUP", 143)]


@pytest.mark.parametrize("first, then, status", ORDERS)
def test_the_first_signal_decides_the_exit_status_not_the_last(first, then, status):
    with signals.handled():
        with pytest.raises(signals.Stopped) as stopped:
            _deliver(getattr(signal, first))
        assert stopped.value.signum == getattr(signal, first)
        _deliver(getattr(signal, then))      # noted, not raised: the report is being written
        _deliver(getattr(signal, then))
        name = signals.first()
    assert name == first
    assert signals.exit_status(name) == status


def test_the_handlers_are_restored_after_the_run():
    before = {n: signal.getsignal(n) for n in signals.STOP_SIGNALS}
    with signals.handled():
        assert all(signal.getsignal(n) is not before[n] for n in signals.STOP_SIGNALS)
    assert {n: signal.getsignal(n) for n in signals.STOP_SIGNALS} == before
