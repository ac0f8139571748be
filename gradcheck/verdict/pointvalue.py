"""A value at the point that is not the function's limit around it.

Central differences read ``f(x + h)`` and ``f(x - h)``, never ``f(x)``: a
function whose value at the point differs from the value on both sides of
it (``where(x == 0, 1, x)``; jax-md's Lennard-Jones energy of two particles
at one place, ``nan_to_num(inf - inf) = 0`` where a step away gives 4e24)
gave quotients that agree at every step, and its first order passed,
though it has no derivative there. ``point_results`` evaluates each
differentiated input moved by ``SPACINGS`` of each coordinate's magnitude
both ways along a sign vector: where the two sides agree with each other,
not with the value at the point, and come no closer to it as the move
shrinks, the point is a discontinuity
and no comparison there is evidence (a ``discontinuous`` result, as for
steps that straddle a jump: the check was not judged). A jump whose sides
differ is the difference quotients' to find (``richardson._straddling``).
Fast mode's central difference already read both sides along one direction:
where their mean is the value at the point (``core.fast``'s midpoint gap),
no closer look is made.
"""
from __future__ import annotations

import functools

import numpy as np

from adcheck.gradcheck.core import coords
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.fast import MIDPOINT_GAPS
from adcheck.gradcheck.verdict.compare import Result
from adcheck.gradcheck.verdict.faults import discontinuous_result

#: the moves, relative to each coordinate's magnitude (``FLOOR``'s at 0): far
#: below any kink a step could reach, far above a point; the gap of a function
#: continuous there (a kink at the point: ``norm`` at 0) shrinks with the move
SPACINGS = (2.0 ** -20, 2.0 ** -30)
FLOOR = 2.0 ** -6
#: a gap, relative to the output's largest value, that no rounding explains
BEYOND = 1e-6
#: a signs pattern of its own: the check's random stream is left as it was
SIGNS_SEED = 0


def point_results(ev: Evaluator) -> list:
    """A failing ``discontinuous`` result per (output, input) whose value at
    the point is not the function's limit around it (see the module docstring)."""
    p = ev.problem
    results = []
    # (fast mode's two sides already agree with the point: nothing closer to look at)
    screened = ev.memo.get(MIDPOINT_GAPS, {})
    for in_idx in p.diff_in:
        if screened.get(in_idx, np.inf) <= BEYOND:
            continue
        x = coords.to_real(p.arrays[in_idx])
        wide = np.asarray(p.arrays[in_idx]).dtype in (np.float64, np.complex128)
        if x.size == 0 or not wide or not np.isfinite(x).all():
            continue   # (a narrower input cannot be moved that little; its float64 run can)
        # (a coordinate's own magnitude: 1e-150 moved by 2**-36 would cross 0)
        unit = _signs(x.size) * np.where(x != 0, np.abs(x), FLOOR)
        moved = x + np.multiply.outer(_MOVES, unit)
        arrays = coords.from_real_rows(moved, p.arrays[in_idx].shape, p.arrays[in_idx].dtype)
        outs = ev.outputs_at(in_idx, arrays, f"evaluating input {in_idx} beside the point",
                             tolerant=True)
        for o, rows in outs.items():
            found = _gap(coords.to_real(p.out_arrays[o]).reshape(-1),
                         coords.to_real_rows(rows).reshape(2, 2, -1))
            if found is not None:
                results.append(_result(o, in_idx, *found))
    return results


#: each row of the moved inputs: by spacing, both ways (``_gap`` reads them so)
_MOVES = np.array([s * spacing for spacing in SPACINGS for s in (1.0, -1.0)])


@functools.lru_cache(maxsize=32)
def _signs(size: int) -> np.ndarray:
    """The moves' fixed signs for an input of ``size`` real coordinates (kept:
    a generator made for each input cost as much as the evaluation beside it)."""
    signs = np.random.default_rng(SIGNS_SEED).choice([-1.0, 1.0], size=size)
    signs.flags.writeable = False
    return signs


def _gap(centre: np.ndarray, sides: np.ndarray):
    """``(entry, value, beside)`` of the first output coordinate whose sides
    agree, differ from its value at the point, and do not come closer to it
    as the move shrinks a thousandfold; or ``None``. ``sides``: by spacing,
    by side."""
    if not np.isfinite(centre).all() or not np.isfinite(sides).all():
        return None   # (NaN or inf there: the finite-value checks say so)
    far, near = sides
    allowed = BEYOND * max(np.abs(centre).max(initial=0.0), np.abs(near).max(initial=0.0)) \
        + np.finfo(np.float64).tiny
    beside = (near[0] + near[1]) / 2
    gap = np.abs(beside - centre)
    bad = (np.abs(near[0] - near[1]) <= allowed) & (gap > allowed)
    bad &= gap >= np.abs((far[0] + far[1]) / 2 - centre) / 4
    if not bad.any():
        return None
    k = int(np.flatnonzero(bad)[0])
    return k, float(centre[k]), float(beside[k])


def _result(out_idx: int, in_idx: int, k: int, value: float, beside: float) -> Result:
    return discontinuous_result(
        out_idx, in_idx,
        f"output {out_idx} [{k}] is {value:.6g} at the given inputs but {beside:.6g} on both "
        f"sides of them (input {in_idx} moved by {SPACINGS[-1]:.1e} of its coordinates both "
        "ways, and by 1000 times that): the value at the point is not the function's limit "
        "there (a special case at an exact value, a NaN or a pole replaced by a number), so "
        "the function has no derivative there and finite differences, which never read the "
        "point itself, are no evidence; check it at a point away from that value")
