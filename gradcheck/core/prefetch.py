"""Products asked for ahead: the prefetch cache of an ``Evaluator``.

A later check (scaling, undefined gradients) may need vjps or jvps of a few
vectors on an index whose Jacobian is about to be built in batches. Asked
for ahead (``Prefetch.ask``, a block of vectors), they are computed when the
next batch of that kind on that index runs, in a batch of their own, or,
inside ``riding()``, riding in that batch when there is room; their results
are kept until the same block is asked for, and serve that request once.
``Evaluator`` owns one; this module holds only the bookkeeping (which blocks
wait, which results are kept, which batch carried riders), no evaluation.
Imports nothing of gradcheck.
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np


class Prefetch:
    """Blocks of vectors asked for ahead and their kept products, by kind and index."""

    def __init__(self):
        #: blocks asked for ahead (each an array, one vector per row), by kind and index
        self._pending: dict = {"vjp": {}, "jvp": {}}
        #: their results by (kind, index): a list of ``(block, products by receiver)``
        self._kept: dict = {}
        #: inside ``riding``: "first" or "again"; and per (kind, index) the
        #: request size and the blocks its first batch carried
        self._riding = None
        self._rode: dict = {}
        #: the engine batches of the last first run inside ``riding``, in order:
        #: ``(kind, index, batch, result, what)``; ``None`` once a request of that run
        #: was met otherwise (kept, looped), when only the whole run repeated
        #: is the same repeat (``gradcheck.core.repeat``)
        self.recorded: list | None = []
        #: results a repeat already made, handed to the batches asked again
        self._replay: list = []

    def ask(self, kind: str, idx: int, vectors: np.ndarray) -> None:
        """Wait for the next batch of ``kind`` on ``idx`` with the block ``vectors``."""
        self._pending[kind].setdefault(idx, []).append(vectors)

    def pending(self, kind: str, idx: int) -> list:
        """The blocks waiting on ``idx``, handed over (no longer waiting)."""
        return self._pending[kind].pop(idx, [])

    def keep(self, kind: str, idx: int, block: np.ndarray, products: dict) -> None:
        """Keep ``products`` (stacked, by receiver), those of ``block``, for a
        later request of the same block."""
        self._kept.setdefault((kind, idx), []).append((block, products))

    def kept(self, kind: str, idx: int, vectors: np.ndarray) -> dict | None:
        """The kept products of a block equal to ``vectors`` bit for bit (each
        serves one request), or ``None``."""
        held = self._kept.get((kind, idx))
        for k, (block, products) in enumerate(held or ()):
            # (the very block asked for ahead, handed back, is its own equal)
            if block is vectors or block.shape == vectors.shape and \
                    block.tobytes() == vectors.tobytes():
                del held[k]
                return products
        return None

    @contextmanager
    def riding(self, again: bool = False):
        """See ``Evaluator.riding``."""
        before = self._riding
        self._riding = "again" if again else "first"
        if not again:
            self.recorded = []
        try:
            yield
        finally:
            self._riding = before

    def riders(self, kind: str, idx: int, n: int, pending: list, size: int) -> list | None:
        """The blocks that ride in a request of ``n`` vectors whose batches take
        ``size``: the ``pending`` ones on a first run, when there is room; on
        a repeat of a request of that size, the ones its first run carried."""
        if self._riding == "first" and pending and n + sum(map(len, pending)) <= size:
            self._rode[kind, idx] = (n, pending)
            return pending
        if self._riding == "again" and not pending and self._rode.get((kind, idx), (0,))[0] == n:
            return self._rode.pop((kind, idx))[1]
        return None

    def record(self, kind: str, idx: int, batch: np.ndarray, result: dict | None,
               what: str) -> None:
        """Note an engine batch of a first run, made while ``what`` (``result``:
        ``None`` when the loop makes it instead, which no replay of batches repeats)."""
        if self._riding != "first" or self.recorded is None:
            return
        if result is None:
            self.recorded = None
        else:
            self.recorded.append((kind, idx, batch, result, what))

    def unrecorded(self) -> None:
        """A request of a first run met without an engine batch (a kept product)."""
        if self._riding == "first":
            self.recorded = None

    def replay(self, results: list) -> None:
        """Hand ``results`` (``(kind, idx, batch, result)``, in order) to the
        batches the repeat asks for next."""
        self._replay = list(results)

    def replayed(self, kind: str, idx: int, batch: np.ndarray) -> dict | None:
        """The result a repeat already made of this very batch, once, or ``None``."""
        if not self._replay:
            return None
        k, i, made, result = self._replay[0]
        if k == kind and i == idx and made.shape == batch.shape and \
                made.tobytes() == batch.tobytes():
            del self._replay[0]
            return result
        return None
