"""The rounding noise a function's outputs carry, measured rather than assumed.

Richardson's error estimate assumes each function value is off by a few
ulps of itself. That holds for elementwise arithmetic, not for outputs a
normwise-stable algorithm computes (an SVD, a QR, a solve): pinverse's
small entries carry errors of the size of an ulp of its largest entry, and
a finite difference of them is off by that error over the step. So the
outputs are evaluated at the input moved at random by a few ulps of the
largest input (of its own size for a coordinate far smaller), and the
second difference ``f(x + s) + f(x - s) - 2 f(x)`` of each output coordinate
(about its noise, since the function's curvature over so small a move is
negligible) becomes a floor under that coordinate's rounding noise.
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.core import coords

MOVES = 4           # pairs of moves; the floor is the largest second difference
MOVE_ULPS = 4       # each coordinate moves by up to this many units of its rounding
#: the quantile of the output's magnitudes that stands for its scale
TYPICAL = 0.9
#: how many times its own size a coordinate's move may be (see ``_measured``)
SPAN = 2.0 ** 16
#: no floor above this many ulps of the output's scale (``TYPICAL``), times the
#: largest input (at least 1, at most ``SPAN``): more is no
#: rounding (a function that draws random numbers, a pole's curvature), and must
#: not widen tolerances
CAP_ULPS = 2.0 ** 10


def noise_floor(ev, in_idx: int) -> dict:
    """By output, the measured rounding noise of each real output coordinate
    when input ``in_idx`` moves (zeros where it cannot be measured), measured
    once per check (``ev.memo``)."""
    cache = ev.memo.setdefault("noise_floors", {})
    if in_idx not in cache:
        cache[in_idx] = _measured(ev, in_idx)
    return cache[in_idx]


def _measured(ev, in_idx: int) -> dict:
    p = ev.problem
    base = p.arrays[in_idx]
    vector = coords.to_real(base)
    rng = np.random.default_rng(0)
    # moves of a few ulps of the largest input (inside the function a small input
    # may be added to a large one: logcumsumexp's backward adds the grad_output's
    # logarithm to inputs of 1e4, a staircase whose stairs smaller moves never
    # cross), but at most ``SPAN`` ulps of the coordinate itself: abs's sample
    # mixes 1e-30 and 1e30, and its small coordinates must not cross zero
    largest = max([_largest(a) for a in p.arrays.values()
                   if np.issubdtype(a.dtype, np.inexact)] + [0.0])
    size = np.abs(vector)
    unit = MOVE_ULPS * p.epsilon(in_idx=in_idx) * np.maximum(size, np.minimum(largest,
                                                                              SPAN * size))
    second = {o: np.zeros(coords.to_real(p.out_arrays[o]).size) for o in p.float_out}
    for _ in range(MOVES):   # a pair at a time: the check's memory budget holds
        move = unit * rng.uniform(-1.0, 1.0, vector.size)
        arrays = coords.from_real_rows(np.stack([vector + move, vector - move]), base.shape,
                                       base.dtype)
        outs = ev.outputs_at(in_idx, arrays, f"measuring the rounding noise of the outputs "
                             f"(input {in_idx})", tolerant=True)
        for o in p.float_out:
            plus, minus = coords.to_real_rows(outs.pop(o)).reshape(2, -1)
            # (in place: a million outputs make each temporary 8 MB)
            with np.errstate(invalid="ignore", over="ignore"):
                pair = plus + minus
                pair -= 2 * coords.to_real(p.out_arrays[o])
                np.abs(pair, out=pair)
            pair[~np.isfinite(pair)] = 0.0
            np.fmax(second[o], pair, out=second[o])
            del plus, minus, pair
    floors = {}
    for o in p.float_out:
        mid = coords.to_real(p.out_arrays[o])
        finite = np.abs(mid[np.isfinite(mid)])
        # a high quantile, not the largest: next to a pole (digamma at -4 in a
        # bfloat16 sample) a few values are huge, and their curvature is no noise
        typical = float(np.quantile(finite, TYPICAL)) if finite.size else 0.0
        cap = CAP_ULPS * p.epsilon(out_idx=o) * typical * max(1.0, min(largest, SPAN))
        floors[o] = np.minimum(second[o], cap)
    return floors

def _largest(array: np.ndarray) -> float:
    return coords.largest_finite(array)
