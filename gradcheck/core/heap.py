"""Where the large arrays of a check get their memory: the C heap, or a mapping of their own.

A check evaluates a function thousands of times in batches of a few MiB
each (stacked inputs, outputs, vjps, the engine's temporaries), and every
batch frees what the one before allocated. glibc serves an allocation
above its ``mmap`` threshold (128 KiB at first, raised as such blocks are
freed) from fresh pages that the kernel maps on first touch, and returns
the top of its heap to the kernel past its trim threshold: each batch then
pays a page fault per 4 KiB it writes. On a virtual machine those faults
cost 10 to 25 microseconds of wall time each, mostly outside the process's
CPU time (a precise check of a 4,096-long cumsum: 630,000 faults, 2.5 GB
touched afresh, and a wall time three times its CPU time).

``transient_bytes`` measures how much one call allocates at its peak (a
function's own temporaries, which no array of the check accounts for: a
convolution's unfolded image is nine times its input), so that the budget
can count them.

``keep_freed_blocks`` sets both thresholds to the values glibc's own
adjustment reaches after it frees a 32 MiB block (its largest dynamic
threshold; the trim threshold twice that), so batches reuse the pages the
previous one freed; ``release`` hands the free pages back at the end of a
check, so a check leaves the process's resident set as glibc would. Elsewhere
(another C library, a platform without ``mallopt``) both do nothing.

``mapped`` gives the one array that is no batch (reverse mode's rows, held
through a chunked check) a mapping of its own, outside the heap.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
import sys
import threading

try:
    import resource
except ImportError:   # (not on Windows: there ``_libc`` finds no glibc either)
    resource = None

import numpy as np

#: ``mallopt`` parameters (glibc's malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
#: glibc's largest dynamic mmap threshold on 64-bit systems (32 MiB); the
#: trim threshold it pairs with is twice that
MMAP_THRESHOLD = 32 * 2**20
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD

_state: dict = {"libc": None, "set": False}


def _libc():
    if not sys.platform.startswith("linux"):
        return None
    if _state["libc"] is None:
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _state["libc"] = libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") \
                else False
        except OSError:   # no C library by that name: nothing to tune
            _state["libc"] = False
    return _state["libc"] or None


def keep_freed_blocks() -> bool:
    """Let freed blocks of up to 32 MiB be reused without new page faults
    (once per process); whether the thresholds are set."""
    if _state["set"]:
        return True
    libc = _libc()
    if libc is None:
        return False
    # (each call returns 1 on success; a refused value leaves glibc's default)
    ok = libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
    ok = libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1 and ok
    _state["set"] = ok
    return ok


def mapped(shape: tuple, order: str = "C") -> np.ndarray:
    """An uninitialized float64 array of ``shape`` in an anonymous mapping of
    its own, its pages (small ones) mapped at once, returned to the kernel
    when the array is freed.

    For the one array of a check far larger than a batch (reverse mode's held
    rows: 134 MB for a 4,096-long cumsum), touched once afresh. NumPy asks
    for transparent huge pages on arrays of 4 MiB and more; on this project's
    virtual machines their first touch cost that array from 0.04 to 0.6 s of
    system time, run to run (with the host's state); small pages mapped in
    one call (``MAP_POPULATE``, Linux) cost 0.06 to 0.08 s in runs beside them.
    """
    size = max(1, int(np.prod(shape, dtype=np.int64))) * 8
    flags = getattr(mmap, "MAP_PRIVATE", 0) | getattr(mmap, "MAP_ANONYMOUS", 0) | \
        getattr(mmap, "MAP_POPULATE", 0)
    mapping = mmap.mmap(-1, size, flags=flags) if flags else mmap.mmap(-1, size)
    return np.ndarray(shape, dtype=np.float64, buffer=mapping, order=order)


def release() -> None:
    """Return the heap's free pages to the kernel (after a check)."""
    libc = _libc()
    if libc is not None and _state["set"] and _faulted():
        _trim(libc)


def _faulted() -> bool:
    """Whether this thread took a page fault since ``_trim`` last read its
    resident set. Without one no page became resident, so the heap cannot
    have grown past ``TRIM_FLOOR``: most small checks fault no page, and the
    count costs a fifth of reading /proc/self/statm (the read was about 2 %
    of a small fast check)."""
    faults = _fault_count()
    return faults is None or faults != _trimmed["faults"] or _trimmed["pid"] != os.getpid()


def _fault_count() -> tuple | None:
    """The calling thread's page faults so far, with its identity; ``None``
    where they cannot be counted.

    The thread's own count, not the process's: summing every thread's reads
    each one's CPU time, and a thread running on another core (a BLAS pool's
    spinning after a product) made that cost 0.1 to 4 ms a call on these
    2-core machines, a fifth of a small fast check. A fault only in another
    thread goes unseen until this one faults: a trim skipped, which is only
    a saving (``_trim``)."""
    if resource is None:
        return None
    usage = resource.getrusage(_RUSAGE)
    return threading.get_ident(), usage.ru_minflt + usage.ru_majflt


#: whose faults ``_fault_count`` counts: the calling thread's where the platform
#: can say (Linux), else the process's
_RUSAGE = None if resource is None else getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF)


#: growth of the resident set since the last trim up to which a trim is skipped:
#: glibc left to itself keeps as much resident (its blocks under its mmap threshold,
#: 128 KiB and rising as blocks are freed, stay in the heap), and a trim walks the
#: whole heap (15 us and more, 1 % of a small check) where the resident set is
#: read in 1 us
TRIM_FLOOR = 2 * 2**20
#: the process (its id) and its resident set after the last trim, or the least since
_trimmed: dict = {"pid": None, "resident": 0, "faults": None}


def _trim(libc, always: bool = False) -> int | None:
    """``malloc_trim(0)``, unless (``always`` false) the resident set grew by
    no more than ``TRIM_FLOOR`` since this process last trimmed; the resident
    set after it (``None``: unknown).

    Skipping is only a saving: memory in use at the last trim and freed since
    stays resident without any growth, so a heap that did not grow may still
    hold free resident pages (``always`` for a measure, which they would hide)."""
    _trimmed["faults"] = _fault_count()   # (before the read: ``_faulted`` errs towards reading)
    resident = _resident()
    if not always and resident is not None and _trimmed["pid"] == os.getpid() and \
            resident <= _trimmed["resident"] + TRIM_FLOOR:
        _trimmed["resident"] = min(_trimmed["resident"], resident)
        return resident
    libc.malloc_trim(0)
    resident = _resident()
    _trimmed.update(pid=os.getpid(), resident=resident or 0)
    return resident


#: during a measured call, blocks from this size up get pages of their own
#: and give them back when freed, so the resident set follows what it holds
MEASURED_MMAP_THRESHOLD = 64 * 2**10
_STATUS = "/proc/self/status"
_STATM = "/proc/self/statm"
_CLEAR_REFS = "/proc/self/clear_refs"
_PAGE = mmap.PAGESIZE
#: the three files above, opened once per process (``_fd``): opening and
#: parsing them afresh cost 50 us a check, a tenth of a small check's time
_open: dict = {"pid": None, "status": None, "statm": None, "clear": None,
               "ids": {"status": None, "statm": None, "clear": None}}
_PATHS = {"status": (_STATUS, os.O_RDONLY), "statm": (_STATM, os.O_RDONLY),
          "clear": (_CLEAR_REFS, os.O_WRONLY)}


def _fd(name: str):
    """The descriptor kept for ``name`` ("status", "statm", "clear") in this
    process, or ``None``: a forked child reopens them all, since its parent's
    descriptors would read the parent's counters; one that something else
    closed (a test session's fixtures, a library) is reopened: its number may
    by now name another file, whose text holds no counter (every evaluation
    was measured as 0 bytes in a long test session). Only the descriptor about
    to be used is looked at (an ``fstat`` of a /proc file costs 4 us on these
    machines; all three before every read were 50 us a check)."""
    pid = os.getpid()
    if _open["pid"] != pid:
        # (a parent's numbers are this child's too: closing them would close the
        # child's copies only, and the child needs descriptors of its own anyway)
        _open.update(pid=pid, status=None, statm=None, clear=None,
                     ids=dict.fromkeys(_PATHS))
    fd = _open[name]
    if fd is None and _open["ids"][name] == _UNOPENED:
        return None   # (not ours here: a sandbox; not asked again)
    if fd is None or _identity(fd) != _open["ids"][name]:
        # (a number that names another file now is no longer ours to close)
        path, flags = _PATHS[name]
        fd = _open[name] = _opened(path, flags)
        _open["ids"][name] = _UNOPENED if fd is None else _identity(fd)
    return fd


#: ``_open["ids"]`` of a file that could not be opened in this process
_UNOPENED = "unopened"


def _identity(fd: int):
    """What ``fd`` names now (device and inode), ``None`` where it is closed."""
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _opened(path: str, flags: int):
    try:
        return os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    except OSError:   # no such file, or not ours (a sandbox): nothing measured
        return None


def _status_bytes(key: str):
    """A size from ``/proc/self/status`` in bytes (``VmRSS``, ``VmHWM``)."""
    fd = _fd("status")
    if fd is None:
        return None
    data = os.pread(fd, 1 << 14, 0)   # (read from the start: the kernel writes it anew)
    start = data.find(key.encode() + b":")
    if start < 0:
        return None
    return int(data[start + len(key) + 1:data.index(b"\n", start)].split()[0]) * 1024


def _reset_peak(resident: int | None = None):
    """Start the kernel's high-water mark of the resident set afresh (Linux
    4.0 or later); its value now, or ``None`` where it cannot be reset.
    ``resident``: the resident set read just before (nothing allocated since),
    which the mark now is."""
    fd = _fd("clear")
    if fd is None:
        return None
    try:
        os.write(fd, b"5")
    except OSError:   # not writable here after all
        return None
    # the mark is now the resident set, which statm gives in a fifth of the time
    if resident is None:
        resident = _resident()
    return _status_bytes("VmHWM") if resident is None else resident


def _resident() -> int | None:
    """The resident set in bytes (``/proc/self/statm``), or ``None``."""
    statm = _fd("statm")
    return None if statm is None else int(os.pread(statm, 256, 0).split()[1]) * _PAGE


def transient_bytes(call):
    """``(call(), bytes)``: how many bytes ``call`` held at once at its peak,
    counting what it returns and its own temporaries; ``None`` where this
    cannot be measured (not glibc on Linux, or ``/proc/self/clear_refs`` not
    writable).

    The measure is the growth of the kernel's high-water mark of the resident
    set, reset just before the call (for the whole process: ``ru_maxrss``
    and ``VmHWM`` count from there afterwards; the README says so). The
    free space a long-running process has inside its heap would hide a
    call's blocks from any count of the heap's size, so during the call
    every block of 64 KiB or more is mapped on its own: its pages are
    resident while it lives and returned when it is freed. Smaller blocks
    may reuse that free space unseen.
    """
    libc = _libc()
    if libc is None or not keep_freed_blocks():
        return call(), None
    # free resident space in the heap would hide whatever reuses it: 0 bytes measured
    # after every check in a long test session, whose earlier tests' arrays were freed
    # after the last trim without the resident set growing
    resident = _trim(libc, always=True)
    libc.mallopt(_M_MMAP_THRESHOLD, MEASURED_MMAP_THRESHOLD)
    try:
        before = _reset_peak(resident)
        result = call()
        peak = None if before is None else _status_bytes("VmHWM")
    finally:
        libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    return result, None if peak is None else max(0, peak - before)
