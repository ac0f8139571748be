"""Richardson's sentinel: the quotient at the smallest step, which tells a staircase from a line.

At two wide steps a staircase's quotients can agree as a line's do (its stairs
are narrower than the steps: ``round(x, 3)`` reads as slope 1); the central
difference at the smallest step of the ladder (level ``LEVELS - 1``) sees the
flat stair. A column whose first two quotients agree stops only once the
sentinel agrees with its estimate (``disagree``).

The columns that would stop are confirmed a group at a time (``confirmed``):
the input moved at once along every column of a group of ``GROUP``, column
``j`` by its sentinel step ``h_j`` times a random weight ``w_j`` (``|w_j|`` in
[1, 2], either sign), costs two evaluations where one column at a time costs
two per column. Its central difference is ``sum_j w_j h_j J[:, j]`` to within
the rounding of two function values (the cross terms are of third order in
steps of ``|x| 2**-18``), which the columns' estimates predict. The group's allowance is the sum of
its columns' (as ``disagree`` gives them), with the rounding of the group's
own two values in place of each column's sentinel noise.

Grouping changes no decision one way: a group that does not agree has each
of its columns' sentinels evaluated and judged alone, as every column that
did not stop has (a smooth function's groups agree: its estimates are off by
far less than the allowance). The other way, a column that alone would not
stop is stopped by its group only when the other columns' gaps cancel its
own (random weights make an exact cancellation improbable; a staircase's gap
is the size of the derivative, far above any allowance), or when its gap is
below the other columns' allowances together (about ``GROUP`` times the
precise tolerance's relative allowance of the columns' largest entries): its
estimate then rests on its two wide steps, whose agreement to rounding it
has shown.
"""
from __future__ import annotations

import numpy as np

from gradcheck import coords
from gradcheck.problem import Problem
from gradcheck.quotients import differences_of, stacked_differences

GROUP = 16          # columns whose sentinels are taken in one evaluation pair
SAFETY_GAP = 8      # how many error estimates apart the sentinel may be
WEIGHT_SEED = 0     # the groups' weights: reproducible from run to run


def rounding(problem: Problem, outputs) -> float:
    """The largest rounding unit of the float outputs ``outputs``."""
    return max(coords.rounding_unit(problem.out_arrays[o].dtype) for o in outputs)


def disagree(eps: float, current: dict, sentinel: tuple, active) -> np.ndarray:
    """Per coordinate, whether the sentinel's quotient is farther from the
    estimate than its error, the sentinel's rounding noise and the precise
    tolerance's relative allowance allow (a NaN sentinel, never evaluated for a
    confirmed column, is not far)."""
    far = []
    for o, (best, err) in current.items():
        d = sentinel[0][o][active]
        noise = np.max(sentinel[1][o][active], axis=-1, keepdims=True,  # the output's largest
                       initial=0.0)
        scale = np.max(np.abs(best), axis=1, initial=0.0, where=np.isfinite(best))[:, None]
        with np.errstate(invalid="ignore"):
            gap = np.abs(d - best)
            allowed = SAFETY_GAP * (err + noise) + np.sqrt(eps) / 2 * (np.abs(best) + scale)
            far.append(np.any(gap > allowed, axis=1))
    return np.any(far, axis=0)


def first(ev, source: tuple, window, current: dict, settled, active, level: int
          ) -> tuple | None:
    """The sentinels of Richardson's first phase: the columns ``active`` that
    would stop (``settled``) confirmed a group at a time, and each other
    column's own sentinel quotient and noise (at ``level`` of ``source``'s
    steps) by output, rows of every column of ``source`` (NaN for a confirmed
    column, which ``disagree`` then finds not far); ``None`` when every
    column was confirmed. ``source``, ``window``: as ``differences_of`` takes them."""
    in_idx, steps, directions, columns = source
    columns = np.arange(steps.shape[1]) if columns is None else np.asarray(columns)
    small = steps[level, active]
    parts, weights = groups(np.flatnonzero(settled))
    sure = np.zeros(active.size, bool)
    if parts:
        moves = np.zeros((len(parts), ev.problem.layout.in_size(in_idx)))
        for g, (rows, w) in enumerate(zip(parts, weights)):
            if directions is None:
                moves[g, columns[active[rows]]] = w * small[rows]
            else:
                moves[g] = (w * small[rows]) @ np.asarray(directions)[active[rows]]
        # (steps of 1 along each group's move: quotients in the move's units)
        along, noise = stacked_differences(ev, in_idx, np.ones((1, len(parts))),
                                           np.arange(len(parts)), moves, window)
        agree = confirmed(rounding(ev.problem, current), current, small, parts, weights,
                          (along[0], noise[0]))
        for rows, good in zip(parts, agree):
            sure[rows] = good
    need = active[~sure]
    if not need.size:
        return None
    values, noise = differences_of(ev, *source, window)(np.r_[level], need)
    made = ({}, {})
    for found, part in zip(made, (values[0], noise[0])):
        for o, rows in part.items():
            found[o] = np.full((steps.shape[1], rows.shape[1]), np.nan)
            found[o][need] = rows
    return made


def groups(candidates: np.ndarray) -> tuple:
    """``candidates`` in groups of ``GROUP`` and each group's weights."""
    rng = np.random.default_rng(WEIGHT_SEED)
    signed = rng.uniform(1.0, 2.0, len(candidates))
    signed[rng.random(len(candidates)) < 0.5] *= -1
    spans = range(0, len(candidates), GROUP)
    return ([candidates[a:a + GROUP] for a in spans], [signed[a:a + GROUP] for a in spans])


def confirmed(eps: float, current: dict, steps: np.ndarray, parts: list, weights: list,
              along: tuple) -> np.ndarray:
    """Per group of ``parts`` (rows of ``current``'s estimates), whether its
    combined sentinel agrees with the estimates: ``along`` holds, by output,
    the central differences along each group's combined move (``sum_j w_j
    steps[j] e_j``, a step of 1) and their rounding noise; ``steps`` the
    columns' sentinel steps."""
    relative = np.sqrt(eps) / 2
    quotients, noises = along
    agree = np.ones(len(parts), bool)
    for o, (best, err) in current.items():
        for g, (rows, w) in enumerate(zip(parts, weights)):
            u = w * steps[rows]
            if rows[-1] - rows[0] == len(rows) - 1:   # (a run of columns: views, no copies)
                rows = slice(rows[0], rows[-1] + 1)
            b, e = best[rows], err[rows]
            size = np.abs(b)
            scale = np.max(size, axis=1, initial=0.0)
            # sum_j |u_j| (SAFETY_GAP e_ij + relative (|b_ij| + scale_j)), as products
            # (NaN, an estimate or a step out of the domain, never agrees)
            weight = np.abs(u)
            allowed = SAFETY_GAP * (weight @ e) + relative * (weight @ size + weight @ scale)
            allowed += SAFETY_GAP * np.max(noises[o][g], initial=0.0)
            with np.errstate(invalid="ignore"):
                gap = np.abs(quotients[o][g] - u @ b)
                agree[g] &= bool(np.all(gap <= allowed))
    return agree
