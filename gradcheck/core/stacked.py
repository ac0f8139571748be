"""Stacked products put together: consecutive batches joined, single rows stacked.

What ``gradcheck.core.evaluation`` returns for many vectors is, per receiver,
one array with a first dimension of one entry per vector, or ``None`` where no
vector gives that receiver anything. Imports nothing from gradcheck.
"""
from __future__ import annotations

import numpy as np


def join(parts: list, zeros) -> dict:
    """Stacked products of consecutive batches joined: ``None`` (no gradient)
    where every batch has none, else ``zeros(r, n)`` for a batch of ``n``
    vectors without one. ``parts``: ``(n, products by receiver)``."""
    joined = {}
    for r in parts[0][1]:
        pieces = [(n, part[r]) for n, part in parts]
        if all(piece is None for _, piece in pieces):
            joined[r] = None
        else:
            joined[r] = np.concatenate([zeros(r, n) if piece is None else piece
                                        for n, piece in pieces])
    return joined


def stack(rows: list, receivers: list, zeros, absent) -> dict:
    """Per receiver, its entries of ``rows`` (dicts by receiver) stacked: ``absent(r)``
    where every entry is ``None``, else with ``zeros(r)[k]`` for a ``None``."""
    stacked = {}
    for r in receivers:
        parts = [row.get(r) for row in rows]
        if all(part is None for part in parts):
            stacked[r] = absent(r)
        else:
            filler = zeros(r)
            stacked[r] = np.stack([filler[k] if part is None else part
                                   for k, part in enumerate(parts)])
    return stacked
