"""Stairs a function climbs farther than the differences' steps.

A 0/1 quantizer with a straight-through backward (pyro's: forward
``(x > t)``, backward the gradient as it came) is flat at every step central
differences take, so its numerical block is zero where the backward's is
not. Its values at the point are too few (0 and 1, or only 0) for
``grids.stair_width`` to see stairs in them, and the failure said "the
function does not use this input". ``moved_width`` moves the input farther
(a tenth of its scale to ten times it, both ways) and reads how the output
changed: not at all is an input unused here and around; changes that are
whole multiples of one width, with the values at the point, are stairs.
"""
from __future__ import annotations

import math

import numpy as np

from adcheck.gradcheck.core.grids import stair_width

#: the moves of an input, in units of its largest magnitude (at least 1): from
#: within a stair's reach to beyond a threshold, and no round numbers, so that
#: typed inputs (0.7, -1.3) moved by them leave every decimal grid
MOVES = tuple(k / math.pi for k in (0.1, 1.0, 10.0))


def moved_width(ev, in_idx: int, out_idx: int) -> float | None:
    """The width of the stairs output ``out_idx`` climbs as input ``in_idx``
    moves by ``MOVES`` both ways: ``None`` when no move changes it, or its
    changes and values are not whole multiples of one width."""
    p = ev.problem
    base, out = p.arrays.get(in_idx), p.out_arrays.get(out_idx)
    if base is None or out is None or not base.size:
        return None
    scale = max(1.0, float(np.max(np.abs(base[np.isfinite(base)]), initial=0.0)))
    changes = []
    for move in MOVES:
        for sign in (-1.0, 1.0):
            try:
                moved = ev.evaluate({in_idx: base + sign * move * scale},
                                    "looking for the stairs of a function flat at the steps")
            except Exception:  # noqa: BLE001 - a move out of the domain says nothing here
                continue
            change = np.asarray(moved[out_idx]) - out
            changes.append(change[np.isfinite(change)].ravel())
    changes = np.concatenate(changes) if changes else np.zeros(0)
    changes = changes[changes != 0]
    if not changes.size:
        return None
    # (a change is a difference of two stairs either way: with its negation a 0/1
    # quantizer's values and changes are three, which ``stair_width`` asks for)
    width = stair_width(np.concatenate([np.asarray(out).ravel(), changes, -changes]))
    # every change a whole stair or more: ndtr(-12) moved to ndtr(-8) changes by
    # 2.2e-16, within stair_width's rounding of 0 stairs of 1, and is no stair
    return width if width and np.all(np.abs(changes) >= width / 2) else None
