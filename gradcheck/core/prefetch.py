"""Products asked for ahead: the prefetch cache of an ``Evaluator``.

A later check (scaling, the adjoint identity) may need vjps or jvps of a few
vectors on an index whose Jacobian is about to be built in batches. Asked
for ahead (``Prefetch.ask``), they are computed when the next batch of that
kind on that index runs, in a batch of their own, or, inside ``riding()``,
riding in that batch when there is room; their results are kept until asked
for, each served once. ``Evaluator`` owns one; this module holds only the
bookkeeping (which vectors wait, which results are kept, which batch carried
riders), no evaluation. Imports nothing of gradcheck.
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np


class Prefetch:
    """Vectors asked for ahead and their kept products, by kind and index."""

    def __init__(self):
        #: vectors asked for ahead, by kind and index
        self._pending: dict = {"vjp": {}, "jvp": {}}
        #: their results, a list (equal vectors may be asked for more than once)
        #: by (kind, index, vector key)
        self._kept: dict = {}
        #: per (kind, index), per vector key kept: its ``_mark``
        self._marks: dict = {}
        #: inside ``riding``: "first" or "again"; and per (kind, index) the
        #: request size and the riders its first batch carried
        self._riding = None
        self._rode: dict = {}

    def ask(self, kind: str, idx: int, vectors: np.ndarray) -> None:
        """Wait for the next batch of ``kind`` on ``idx`` with ``vectors``."""
        self._pending[kind].setdefault(idx, []).extend(vectors)

    def pending(self, kind: str, idx: int) -> list:
        """The vectors waiting on ``idx``, handed over (no longer waiting)."""
        return self._pending[kind].pop(idx, [])

    def keep(self, kind: str, idx: int, vector: np.ndarray, row: dict) -> None:
        """Keep ``row``, the products of ``vector``, for a later request."""
        key = _key(vector)
        rows = self._kept.setdefault((kind, idx, key), [])
        if not rows:   # a new vector: where a request's vectors could be it
            self._marks.setdefault((kind, idx), {})[key] = _mark(vector)
        rows.append(row)

    @contextmanager
    def riding(self, again: bool = False):
        """See ``Evaluator.riding``."""
        before = self._riding
        self._riding = "again" if again else "first"
        try:
            yield
        finally:
            self._riding = before

    def riders(self, kind: str, idx: int, n: int, pending: list, size: int) -> list | None:
        """The vectors that ride in a request of ``n`` vectors whose batches take
        ``size``: the ``pending`` ones on a first run, when there is room; on
        a repeat of a request of that size, the ones its first run carried."""
        if self._riding == "first" and pending and n + len(pending) <= size:
            self._rode[kind, idx] = (n, pending)
            return pending
        if self._riding == "again" and not pending and self._rode.get((kind, idx), (0,))[0] == n:
            return self._rode.pop((kind, idx))[1]
        return None

    def kept_rows(self, kind: str, idx: int, vectors: np.ndarray) -> list:
        """A kept result (or ``None``) for each of ``vectors``: a few are looked up
        by their own keys; of many, a key is made only where one of the kept
        vectors could be it (at its largest entry, or an all-zero row for a
        zero one: ``_mark``)."""
        found = [None] * len(vectors)
        marks = self._marks.get((kind, idx))
        if not marks:
            return found
        if len(vectors) <= DIRECT:
            return [self._take(kind, idx, vector) for vector in vectors]
        flat = vectors.reshape(len(vectors), vectors[0].size if len(vectors) else 0)
        maybe = np.zeros(len(vectors), bool)
        for j, value in marks.values():
            if j is None:
                maybe[:] = True
            elif value == 0:
                maybe |= ~flat.any(axis=1)
            else:
                maybe |= flat[:, j] == value
        for k in np.flatnonzero(maybe):
            found[k] = self._take(kind, idx, vectors[k])
        return found

    def _take(self, kind, idx, vector) -> dict | None:
        """A kept result for ``vector`` (each serves one request), or ``None``."""
        key = _key(vector)
        rows = self._kept.get((kind, idx, key))
        if not rows:
            return None
        row = rows.pop(0)
        if not rows:
            del self._kept[kind, idx, key]
            del self._marks[kind, idx][key]
        return row


#: requests of up to this many vectors are looked up by each vector's key
DIRECT = 8


def _mark(vector: np.ndarray) -> tuple:
    """``(j, value)``: where a vector equal to ``vector`` must hold ``value``
    (its largest entry; ``(None, None)``: anywhere, as for an empty or
    non-finite one)."""
    flat = vector.reshape(-1)
    if not flat.size:
        return None, None
    j = int(np.argmax(np.abs(flat)))
    return (j, flat[j]) if np.isfinite(flat[j]) else (None, None)


def _key(vector: np.ndarray) -> tuple:
    """A vector as a dictionary key: its dtype, shape and bytes."""
    return vector.dtype.str, vector.shape, vector.tobytes()
