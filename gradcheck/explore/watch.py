"""Points that end the process: what a runner's worker is told and tells.

A function may crash the process at an explored point (a segmentation fault
in C, ``os._exit``, an abort): nothing in that process survives to say
where. A process that checks for another (``adcheck``'s worker processes)
therefore says which point it is about to try, ``watching(before, after,
crashed)``: ``before(key)`` runs before each explored point and ``after()``
once it is done, so the parent that sees the process die knows the point
(``key``). Given the run again with ``crashed`` (key: the parent's words for
how the process ended), the search records each such point as a failure
naming its input and goes on with the next one, instead of running it. The
key is the point's inputs alone: a point that crashed one check of a sample
is recorded, not tried, in its other checks too (a crash is most often in
the forward, which every check runs; one restart per point, not per check).

Outside ``watching`` (``check()`` in a user's own process) nothing is sent
and no point is skipped.
"""
from __future__ import annotations

import hashlib
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class Watch:
    """The hooks of ``watching`` (see the module docstring)."""

    before: Callable[[str], None]
    after: Callable[[], None]
    crashed: dict = field(default_factory=dict)


_WATCH: ContextVar[Watch | None] = ContextVar("adcheck_explore_watch", default=None)


@contextmanager
def watching(before: Callable[[str], None], after: Callable[[], None],
             crashed: dict | None = None):
    """In the block, every explored point is announced (``before(key)``,
    ``after()``) and the points of ``crashed`` are recorded, not run."""
    token = _WATCH.set(Watch(before, after, dict(crashed or {})))
    try:
        yield
    finally:
        _WATCH.reset(token)


def current() -> Watch | None:
    """The ``Watch`` in force, or ``None``."""
    return _WATCH.get()


def point_key(arrays: dict) -> str:
    """A short key of an explored point: the bytes, dtypes and shapes of its
    changed inputs (the same in every run of the same seed, in every process)."""
    digest = hashlib.sha1()
    for i in sorted(arrays):
        a = np.ascontiguousarray(arrays[i])
        digest.update(f"|{i}:{a.dtype.str}:{a.shape}|".encode())
        digest.update(a.tobytes())
    return digest.hexdigest()[:20]


def batch_key(points: list) -> str:
    """The key of a batch of points screened together (``batchscreens``):
    announced while the batch runs, so that a death there keeps the next run
    from batching them again (it then tries them one by one, which names the
    point); no single point has it, so none is recorded as a crash for it."""
    return "batch-" + point_key({k: np.frombuffer(point_key(a).encode(), np.uint8)
                                 for k, a in enumerate(points)})
