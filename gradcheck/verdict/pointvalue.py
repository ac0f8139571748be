"""A value at the point that is not the function's limit around it.

Central differences read ``f(x + h)`` and ``f(x - h)``, never ``f(x)``: a
function whose value at the point differs from the value on both sides of
it (``where(x == 0, 1, x)``; jax-md's Lennard-Jones energy of two particles
at one place, ``nan_to_num(inf - inf) = 0`` where a step away gives 4e24)
gave quotients that agree at every step, and its first order passed,
though it has no derivative there. ``point_results`` reads the outputs at
each differentiated input moved by ``core.beside.SPACINGS`` of each
coordinate's magnitude both ways along a sign vector (evaluated with the
numerical Jacobian's points where they ride there): where the two sides
agree with each other, not with the value at the point, and come no closer
to it as the move shrinks, the point is a discontinuity and no comparison
there is evidence (a ``discontinuous`` result, as for
steps that straddle a jump: the check was not judged). A jump whose sides
differ is the difference quotients' to find (``richardson._straddling``).
Fast mode's central difference already read both sides along one direction:
where their mean is the value at the point (``core.fast``'s midpoint gap),
no closer look is made.
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.core import beside, coords
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.fast import MIDPOINT_GAPS
from adcheck.gradcheck.verdict.compare import Result
from adcheck.gradcheck.verdict.faults import discontinuous_result

#: a gap, relative to the output's largest value, that no rounding explains
BEYOND = 1e-6
_TINY = float(np.finfo(np.float64).tiny)


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
        rows = beside.kept(ev, in_idx)   # (made with the numerical Jacobian's points)
        if rows is None:
            moves = beside.moves(p, in_idx)
            if moves is None:
                continue
            array = p.arrays[in_idx]
            moved = coords.from_real_rows(coords.to_real(array) + moves, array.shape, array.dtype)
            outs = ev.outputs_at(in_idx, moved, f"evaluating input {in_idx} beside the point",
                                 tolerant=True)
            rows = {o: coords.to_real_rows(r) for o, r in outs.items()}
        for o, real in rows.items():
            found = _gap(coords.to_real(p.out_arrays[o]).reshape(-1), real.reshape(2, 2, -1))
            if found is not None:
                results.append(_result(o, in_idx, *found))
    return results


def _gap(centre: np.ndarray, sides: np.ndarray):
    """``(entry, value, around)`` of the first output coordinate whose sides
    agree, differ from its value at the point, and do not come closer to it
    as the move shrinks a thousandfold; or ``None``. ``sides``: by spacing,
    by side."""
    if not np.isfinite(centre).all() or not np.isfinite(sides).all():
        return None   # (NaN or inf there: the finite-value checks say so)
    far, near = sides
    allowed = BEYOND * max(np.abs(centre).max(initial=0.0), np.abs(near).max(initial=0.0)) \
        + _TINY
    around = (near[0] + near[1]) / 2
    gap = np.abs(around - centre)
    if not gap.max(initial=0.0) > allowed:
        return None   # (a function continuous there: every check of one ends here)
    bad = (np.abs(near[0] - near[1]) <= allowed) & (gap > allowed)
    bad &= gap >= np.abs((far[0] + far[1]) / 2 - centre) / 4
    if not bad.any():
        return None
    k = int(np.flatnonzero(bad)[0])
    return k, float(centre[k]), float(around[k])


def _result(out_idx: int, in_idx: int, k: int, value: float, around: float) -> Result:
    return discontinuous_result(
        out_idx, in_idx,
        f"output {out_idx} [{k}] is {value:.6g} at the given inputs but {around:.6g} on both "
        f"sides of them (input {in_idx} moved by {beside.SPACINGS[-1]:.1e} of its coordinates "
        "both ways, and by 1000 times that): the value at the point is not the function's limit "
        "there (a special case at an exact value, a NaN or a pole replaced by a number), so "
        "the function has no derivative there and finite differences, which never read the "
        "point itself, are no evidence; check it at a point away from that value")
