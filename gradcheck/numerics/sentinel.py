"""Richardson's sentinel: the quotient at the smallest step, which tells a staircase from a line.

At two wide steps a staircase's quotients can agree as a line's do (its stairs
are narrower than the steps: ``round(x, 3)`` reads as slope 1); the central
difference at the smallest step of the ladder (level ``LEVELS - 1``) sees the
flat stair. A column whose first two quotients agree stops only once the
sentinel agrees with its estimate (``disagree``).

The columns are taken a group of ``GROUP`` neighbours at a time
(``grouped``, ``confirmed``): the input moved at once along every column of
a group, column ``j`` by its sentinel step ``h_j`` times a random weight
``w_j`` (``|w_j|`` in [1, 2], either sign), costs two evaluations where one
column at a time costs two per column, and they are made with the first two
levels (before those tell which columns stop). Its central difference is
``sum_j w_j h_j J[:, j]`` to within the rounding of two function values (the
cross terms are of third order in steps of ``|x| 2**-18``), which the
columns' estimates predict. The group's allowance is the sum of its columns'
(as ``disagree`` gives them), with the rounding of the group's own two
values in place of each column's sentinel noise. A group is used only when
all its columns would stop.

Grouping changes no decision one way: a group that does not agree, or is
not used, has each of its columns' sentinels evaluated and judged alone, as
every column that did not stop has (a smooth function's groups agree: its
estimates are off by far less than the allowance). The other way, a column
that alone would not stop is stopped by its group only when the other
columns' gaps cancel its own (random weights make an exact cancellation
improbable; a staircase's gap is the size of the derivative, far above any
allowance), or when its gap is below the other columns' allowances together
(about ``GROUP`` times the precise tolerance's relative allowance of the
columns' largest entries): its estimate then rests on its two wide steps,
whose agreement to rounding it has shown.
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.core import coords
from adcheck.gradcheck.core.problem import Problem
from adcheck.gradcheck.numerics.fixed import kept
from adcheck.gradcheck.numerics.quotients import differences_of
from adcheck.gradcheck.core.coords import largest_finite

GROUP = 16          # columns whose sentinels are taken in one evaluation pair
SAFETY_GAP = 8      # how many error estimates apart the sentinel may be
WEIGHT_SEED = 0     # the groups' weights: reproducible from run to run
#: ``first``'s word for sentinels left to come with the next levels
DEFERRED = "deferred"


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
        scale = largest_finite(best, axis=1)[:, None]
        with np.errstate(invalid="ignore"):
            gap = np.abs(d - best)
            allowed = SAFETY_GAP * (err + noise) + np.sqrt(eps) / 2 * (np.abs(best) + scale)
            far.append(np.any(gap > allowed, axis=1))
    return np.any(far, axis=0)


def grouped(source: tuple, level: int, size: int) -> tuple:
    """Every column of ``source`` (as ``differences_of`` takes it) in groups of
    ``GROUP``, their weights, and each group's move (rows of real vectors of
    the input's ``size``): column ``j`` moved by its step at ``level`` times
    its weight. The moves are evaluated with the first levels, before those
    tell which columns stop (one call fewer per chunk; a group with a column
    that does not stop is not used)."""
    in_idx, steps, directions, columns = source
    count = steps.shape[1]
    columns = np.arange(count) if columns is None else np.asarray(columns)
    parts, weights = groups(np.arange(count))
    moves = np.zeros((len(parts), size))
    for g, (rows, w) in enumerate(zip(parts, weights)):
        if directions is None:
            moves[g, columns[rows]] = w * steps[level, rows]
        else:
            moves[g] = (w * steps[level, rows]) @ np.asarray(directions)[rows]
    return parts, weights, moves


def first(ev, source: tuple, window, current: dict, settled, level: int,
          group: tuple):
    """Which sentinels Richardson's first phase still needs, for every column
    of ``source`` (``current``'s rows): the groups (``grouped``) whose columns
    would all stop (``settled``) are confirmed or not by ``group``'s last item
    (their moves' central differences and noise by output). ``None`` when
    every column was confirmed; ``DEFERRED`` when no column that stops lacks
    its group's confirmation: the others go on to the next levels whatever
    their sentinels say, which come with those levels then, in the same
    evaluation (``richardson._deeper``); else the columns whose own sentinel
    quotient and noise (at ``level`` of the steps) are to be evaluated
    (``own_work``: NaN in a confirmed column, which ``disagree`` then finds
    not far). ``source``, ``window``: as ``differences_of`` takes them."""
    steps = source[1]
    parts, weights, along = group
    ready = [g for g, rows in enumerate(parts) if settled[rows].all()]
    sure = np.zeros(steps.shape[1], bool)
    if ready:
        agree = confirmed(rounding(ev.problem, current), current, steps[level],
                          [parts[g] for g in ready], [weights[g] for g in ready],
                          tuple({o: q[ready] for o, q in part.items()} for part in along))
        for g, good in zip(ready, agree):
            sure[parts[g]] = good
    need = np.flatnonzero(~sure)
    if not need.size:
        return None
    if not settled[need].any():   # (each goes on whatever its sentinel says)
        return DEFERRED
    return need


def own_work(ev, source: tuple, window, need: np.ndarray, level: int):
    """The sentinel quotients and noise of the columns ``need`` alone, by output,
    spread over every column of ``source`` (see ``spread``); a generator of its
    evaluation (see ``quotients.evaluated``)."""
    values, noise = yield from differences_of(ev, *source, window)(np.array([level]), need)
    return spread((values[0], noise[0]), need, source[1].shape[1])


def spread(found: tuple, need: np.ndarray, count: int) -> tuple:
    """``found`` (quotients and noise by output, a row per column of ``need``)
    as rows of ``count`` columns, NaN in the others."""
    made = ({}, {})
    for whole, part in zip(made, found):
        for o, rows in part.items():
            whole[o] = np.full((count, rows.shape[1]), np.nan)
            whole[o][need] = rows
    return made


def groups(candidates: np.ndarray) -> tuple:
    """``candidates`` in groups of ``GROUP`` and each group's weights."""
    signed = kept(_weights, len(candidates))   # (read-only)
    spans = range(0, len(candidates), GROUP)
    return ([candidates[a:a + GROUP] for a in spans], [signed[a:a + GROUP] for a in spans])


def _weights(count: int) -> np.ndarray:
    """``count`` weights drawn from ``WEIGHT_SEED``: ``|w|`` in [1, 2), either sign."""
    rng = np.random.default_rng(WEIGHT_SEED)
    signed = rng.uniform(1.0, 2.0, count)
    signed[rng.random(count) < 0.5] *= -1
    return signed


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
