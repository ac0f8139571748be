"""How a worker's end is named: exit statuses, signals, and when a SIGKILL is
called "likely out of memory" (only on evidence)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

from adcheck.runner.deaths import Evidence, describe_exit, resident_memory, status_text

GIB = 2**30


def _exitcode_of(code: str) -> int:
    """The exit status a real child process ends with, as multiprocessing reports
    it (negative: the signal that ended it)."""
    status = subprocess.run([sys.executable, "-c", code], check=False,
                            stderr=subprocess.DEVNULL).returncode
    return status


def test_a_real_segfault_and_a_real_sigkill_are_named_by_their_signal():
    segv = _exitcode_of("import ctypes; ctypes.string_at(0)")
    killed = _exitcode_of("import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    assert (segv, killed) == (-signal.SIGSEGV, -signal.SIGKILL)
    assert describe_exit(segv).startswith("crashed with SIGSEGV (segmentation fault")
    assert describe_exit(killed).startswith("was killed by SIGKILL")


def test_an_exit_status_names_os_exit():
    assert _exitcode_of("import os; os._exit(3)") == 3
    assert "exited with status 3" in describe_exit(3) and "os._exit(3)" in describe_exit(3)
    assert "exited with status 0" in describe_exit(0)


def test_sigkill_is_out_of_memory_only_with_evidence():
    kill = -int(signal.SIGKILL)
    assert "memory" not in describe_exit(kill).split("(")[0]
    assert "likely out of memory" not in describe_exit(kill, Evidence())
    assert "likely out of memory" not in describe_exit(kill, Evidence(2, 2, GIB, 16 * GIB))
    oom_killer = describe_exit(kill, Evidence(oom_kills_before=2, oom_kills_after=3))
    assert "likely out of memory" in oom_killer and "out-of-memory killer" in oom_killer
    grown = describe_exit(kill, Evidence(peak_rss=9 * GIB, available=16 * GIB))
    assert "likely out of memory" in grown and "9.0 GiB of the 16.0 GiB" in grown


def test_the_evidence_never_turns_another_signal_into_memory():
    assert describe_exit(-int(signal.SIGSEGV), Evidence(0, 1, 9 * GIB, 10 * GIB)).startswith(
        "crashed with SIGSEGV")


def test_other_signals_and_plain_statuses():
    assert describe_exit(-int(signal.SIGABRT)).startswith("crashed with SIGABRT (aborted")
    assert describe_exit(-int(signal.SIGTERM)).startswith("was ended by signal SIGTERM")
    assert status_text(1) == "exit status 1"
    assert status_text(-int(signal.SIGSEGV)) == "signal SIGSEGV"


def test_resident_memory_reads_a_live_process():
    peak = resident_memory(os.getpid())
    if sys.platform.startswith("linux"):
        assert peak is not None and peak > 1 << 20     # this interpreter holds megabytes
    assert resident_memory(2**22 + 12345) is None       # no such process
