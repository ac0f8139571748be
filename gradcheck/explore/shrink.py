"""Shrinking a failing point: as few changed entries as possible.

A failing point differs from the given inputs in some entries. Groups of
them, halves first and then single entries, are put back to their given
values while the point still fails (a light delta debugging); what is left
is the smallest set of special entries found within the budget, and the
point is as close to the given input as those allow.
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.explore.catalogue import keep_structure

#: checks a shrink may spend at most
MAX_TRIALS = 24


def _changed(given: dict, arrays: dict) -> list:
    return [(i, int(k)) for i in sorted(arrays)
            for k in np.flatnonzero(arrays[i].reshape(-1) != given[i].reshape(-1))]


def _reverted(given: dict, arrays: dict, entries) -> dict:
    out = {i: a.copy() for i, a in arrays.items()}
    for i, k in entries:
        out[i].reshape(-1)[k] = given[i].reshape(-1)[k]
    out = {i: keep_structure(given[i], a) for i, a in out.items()}
    return {i: a for i, a in out.items() if not np.array_equal(a, given[i])}


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[i], b[i]) for i in a)


def shrink(explorer, arrays: dict, outcome: tuple) -> tuple:
    """``(arrays, outcome)`` of the smallest failing point found by putting
    entries of ``arrays`` back (see the module docstring); ``explorer``
    checks a point (``try_point``) and says how much time is left."""
    given, trials = explorer.given, 0
    changed = _changed(given, arrays)
    size = max(len(changed) // 2, 1)
    while changed and trials < MAX_TRIALS and explorer.remaining() > 0:
        progressed = False
        for start in range(0, len(changed), size):
            if trials >= MAX_TRIALS or explorer.remaining() <= 0:
                break
            group = changed[start:start + size]
            trial = _reverted(given, arrays, group)
            if not trial or _same(trial, arrays):
                continue
            trials += 1
            result = explorer.try_point(trial)
            if result[0] == "fail":
                arrays, outcome, progressed = trial, result, True
                changed = _changed(given, arrays)
                break
        if not progressed:
            if size == 1:
                break
            size = max(size // 2, 1)
    return arrays, outcome
