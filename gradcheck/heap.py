"""How the C heap hands out the large arrays of a check (glibc only).

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
"""
from __future__ import annotations

import ctypes
import ctypes.util
import sys

#: ``mallopt`` parameters (glibc's malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_MMAP_MAX = -4
#: glibc's default for ``M_MMAP_MAX``
_MMAP_MAX_DEFAULT = 65536
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


def release() -> None:
    """Return the heap's free pages to the kernel (after a check)."""
    libc = _libc()
    if libc is not None and _state["set"]:
        libc.malloc_trim(0)


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                 "uordblks", "fordblks", "keepcost")]


def _heap_bytes(libc) -> int:
    """Bytes the heap holds from the kernel, every arena (``mallinfo2``)."""
    libc.mallinfo2.restype = _Mallinfo2
    return int(libc.mallinfo2().arena)


def transient_bytes(call):
    """``(call(), bytes)``: at least how many bytes ``call`` held at once at its
    peak, counting what it returns; ``None`` where this cannot be measured
    (not glibc 2.33 or later).

    The heap is trimmed first and, during the call, every block comes from it
    (no ``mmap``) and nothing is trimmed, so the heap grows to the call's
    peak: its growth is that peak, less any free space the heap already had
    inside it (hence "at least").
    """
    libc = _libc()
    if libc is None or not hasattr(libc, "mallinfo2") or not keep_freed_blocks():
        return call(), None
    libc.malloc_trim(0)
    before = _heap_bytes(libc)
    libc.mallopt(_M_MMAP_MAX, 0)
    libc.mallopt(_M_TRIM_THRESHOLD, 2**31 - 1)   # (an int: the largest)
    try:
        result = call()
        grown = _heap_bytes(libc) - before
    finally:
        libc.mallopt(_M_MMAP_MAX, _MMAP_MAX_DEFAULT)
        libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
        libc.malloc_trim(0)
    return result, max(0, grown)
