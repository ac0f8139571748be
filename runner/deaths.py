"""Why a worker process ended, said in words a user can act on.

A worker that dies while it checks an op is that op's error; the message
names the cause from what the parent can see: the exit status, or the signal
that ended it. A ``SIGKILL`` is the out-of-memory killer's or a memory
limit's way (or another process's), so it is called "likely out of memory"
only with evidence: the kernel's count of OOM kills in this process's memory
cgroup went up while the worker ran, or the worker's resident memory, last
seen, was at least half of the memory available to it. Everything is read
from ``/proc`` and ``/sys/fs/cgroup`` when they exist (Linux), and left out
where they do not.

Example::

    describe_exit(-11)     # 'crashed with SIGSEGV (segmentation fault): ...'
    describe_exit(0)       # 'exited with status 0 ...'
"""
from __future__ import annotations

import signal
from dataclasses import dataclass

#: the share of the available memory above which a SIGKILLed worker is called out of memory
MEMORY_SHARE = 0.5


@dataclass
class Evidence:
    """What the parent saw of a worker while it ran one task."""

    oom_kills_before: int | None = None
    oom_kills_after: int | None = None
    peak_rss: int | None = None        # bytes, the largest resident size seen
    available: int | None = None       # bytes of memory the worker could use

    def out_of_memory(self) -> str | None:
        """Why the evidence says "out of memory", or ``None``."""
        before, after = self.oom_kills_before, self.oom_kills_after
        if before is not None and after is not None and after > before:
            return "the kernel's out-of-memory killer ran while it did"
        if self.peak_rss and self.available and self.peak_rss >= MEMORY_SHARE * self.available:
            return (f"its memory had reached {_size(self.peak_rss)} of the "
                    f"{_size(self.available)} available")
        return None


def _size(count: int) -> str:
    value = float(count)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"  # pragma: no cover - the loop returns


#: what a crash signal means for the code under check
_CRASHES = {
    "SIGSEGV": "segmentation fault: the code under check, or a C library it called, "
               "read or wrote memory it does not own",
    "SIGBUS": "bus error: a C library accessed memory that is not mapped",
    "SIGABRT": "aborted: a C library, or Python itself (a fatal error), gave up; its "
               "message is above on stderr",
    "SIGFPE": "a floating-point or integer division trap in C code",
    "SIGILL": "an illegal instruction in C code",
}


def describe_exit(exitcode: int | None, evidence: Evidence | None = None) -> str:
    """The cause of a worker's end, from ``Process.exitcode`` (negative: a signal)."""
    if exitcode is None:
        return "ended without an exit status"
    if exitcode >= 0:
        return (f"exited with status {exitcode} (the code under check, or a C library it "
                f"called, ended the process: os._exit({exitcode}) or exit({exitcode}))")
    number = -exitcode
    try:
        name = signal.Signals(number).name
    except ValueError:
        return f"was ended by signal {number}"
    if name == "SIGKILL":
        why = evidence.out_of_memory() if evidence is not None else None
        if why is not None:
            return f"was killed (SIGKILL): likely out of memory ({why})"
        return ("was killed by SIGKILL (sent by another process, a memory limit or the "
                "out-of-memory killer)")
    if name in _CRASHES:
        return f"crashed with {name} ({_CRASHES[name]})"
    return f"was ended by signal {name} ({signal.strsignal(number) or 'no description'})"


def status_text(exitcode: int | None) -> str:
    """``"exit status 1"`` or ``"signal SIGSEGV"``: how a process ended, plainly."""
    if exitcode is None:
        return "no exit status"
    if exitcode >= 0:
        return f"exit status {exitcode}"
    try:
        return f"signal {signal.Signals(-exitcode).name}"
    except ValueError:
        return f"signal {-exitcode}"


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None


def _cgroup_memory_dir() -> str | None:
    """This process's memory cgroup folder (v2 unified, or v1 ``memory``)."""
    text = _read("/proc/self/cgroup")
    if text is None:
        return None
    for line in text.splitlines():
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            return f"/sys/fs/cgroup{path}"
        if "memory" in controllers.split(","):
            return f"/sys/fs/cgroup/memory{path}"
    return None


def _field(text: str | None, name: str) -> int | None:
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == name and parts[1].isdigit():
            return int(parts[1])
    return None


def oom_kills() -> int | None:
    """How many processes the OOM killer has ended in this memory cgroup, or
    ``None`` when the count cannot be read."""
    folder = _cgroup_memory_dir()
    if folder is None:
        return None
    found = _field(_read(f"{folder}/memory.events"), "oom_kill")
    return found if found is not None else _field(_read(f"{folder}/memory.oom_control"),
                                                  "oom_kill")


def available_memory() -> int | None:
    """Bytes of memory this process's children may use: the machine's, or its
    memory cgroup's limit when that is lower."""
    total = _field((_read("/proc/meminfo") or "").replace(":", ""), "MemTotal")
    total = total * 1024 if total is not None else None
    folder = _cgroup_memory_dir()
    for name in ("memory.max", "memory.limit_in_bytes"):
        limit = (_read(f"{folder}/{name}") or "").strip() if folder else ""
        if limit.isdigit() and (total is None or int(limit) < total):
            return int(limit)
    return total


def resident_memory(pid: int) -> int | None:
    """Bytes of ``pid``'s peak resident memory (``VmHWM``), or ``None``."""
    text = _read(f"/proc/{pid}/status")
    kib = _field((text or "").replace(":", ""), "VmHWM")
    return None if kib is None else kib * 1024
