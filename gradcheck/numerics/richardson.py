"""Richardson-extrapolated central differences with per-entry error estimates.

For each input coordinate the central difference ``D(h)`` is taken at steps
``h_k = h_0 * 2**-k`` (``h_0`` a 32nd of the coordinate's magnitude, at least
``2**-11``; the floor at an infinite coordinate) and extrapolated in a
tableau, ``R[k][j] = (4**j R[k][j-1] - R[k-1][j-1]) / (4**j - 1)``, which
cancels the ``h**2``, ``h**4``, ... terms of the error. Each extrapolated
entry gets an error estimate: its largest distance to its lower-order parent
and to its same-order neighbours at the next larger and smaller step, plus
the propagated rounding noise of the function values (for a complex output,
of its modulus; never below the noise measured by ``gradcheck.numerics.noisefloor``,
which an SVD's or a solve's normwise rounding puts in small entries). Each output coordinate keeps the entry with the smallest
estimate. Steps that leave the function's domain (NaN or an exception) are
discarded.

Levels: ``k < 2`` first; a coordinate whose two quotients agree to rounding
in every output coordinate, and with the sentinel (the smallest step, ``k =
13``), stops there (4 evaluations, and its share of its group's sentinel pair:
see ``gradcheck.numerics.sentinel``; a linear or quadratic function's central
difference is exact at any step, and deeper levels only add noise; the
sentinel catches a staircase whose stairs give equal quotients at the two
wide steps). The others take ``k < 4`` and their own sentinel; then all
``k < 14`` unless every estimate has converged by then (its share of the
precise tolerance, ``SAFETY`` times the estimate, is at most the tolerance's
relative allowance) and agrees with the sentinel. Most smooth columns stop
there: 10 evaluations instead of 28, and a tableau of 5 levels instead of
14. Steps
that straddle a jump (or a kink, or a pole) are no evidence: the quotients
before the last *break* (see ``_straddling``) are discarded (unless the
deeper quotients stray from a slope the wide steps settled on by rounding
only: ``gradcheck.numerics.stairs``), and a
coordinate whose smallest steps still straddle one gets smaller steps, down
to ``k < 32``; entries no step resolves are marked ``Jacobian.unresolved``.
So does one whose quotients at ``k = 13`` still move by more than noise
while the function's move shrinks with the step (``_moving``: a clamp
within reach, whose quotients grow by less than a break).
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.core import budget as budgets
from adcheck.gradcheck.numerics import sentinel as sentinels
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.numerics.quotients import differences_of, evaluated
from adcheck.gradcheck.numerics.noisefloor import ZERO_SIZE as SIZE_FLOOR, unit_rounding
from adcheck.gradcheck.numerics.stairs import stair_noise
from adcheck.gradcheck.core.problem import Problem
from adcheck.gradcheck.core.coords import largest_finite

LEVELS = 14         # number of step sizes at most
AGREE_LEVELS = 2    # steps of the first phase: enough where their quotients agree to rounding
FIRST_LEVELS = 4    # steps tried before deciding whether smaller ones are needed
CONVERGED = 1 / 8   # "converged": error below this fraction of the relative allowance
#                     (1 / precise.SAFETY: the estimate's term of the tolerance is then
#                     at most the allowance, so stopping early at most doubles it)
ORDERS = 3          # extrapolation columns beyond the plain difference
JUMP_LEVELS = 8     # levels added at a time below LEVELS while a jump is straddled
DEEPEST = 32        # levels at most, where steps straddle a jump (h down to |x| 2**-36)
CLEAN = 3           # levels free of a jump needed below it (an extrapolation and its check)
SIGNIFICANT = 8     # a move of the quotient this many times its noise is not noise
GROWTH = 1.5        # a move this many times every earlier one is a break (a jump)
PIECE = 2 ** 16     # entries per level taken at once by the elementwise tableau work
_AGREE = np.arange(AGREE_LEVELS)                        # the first phase's levels
_SECOND = np.arange(AGREE_LEVELS, FIRST_LEVELS)         # the second's
_SECOND_AND_SENTINEL = np.append(_SECOND, LEVELS - 1)   # with the deferred sentinels


def _tableau(diffs: list, noises: list) -> tuple:
    """Rows of extrapolated values and their propagated rounding noise."""
    values, noise = [[diffs[0]]], [[noises[0]]]
    for k in range(1, len(diffs)):
        row, row_noise = [diffs[k]], [noises[k]]
        for j in range(1, min(k, ORDERS) + 1):
            w = 4.0 ** j   # (in place: each temporary is a pass over the piece)
            value = w * row[j - 1]
            value -= values[k - 1][j - 1]
            row.append(np.divide(value, w - 1, out=value))
            value = w * row_noise[j - 1]
            value += noise[k - 1][j - 1]
            row_noise.append(np.divide(value, w - 1, out=value))
        values.append(row)
        noise.append(row_noise)
    return values, noise


def extrapolate(diffs: list, noises: list, out: tuple | None = None) -> tuple:
    """Best tableau entry per coordinate and its error estimate (written into
    ``out``, two arrays of ``diffs[0]``'s shape, when given).

    An entry's truncation estimate is its largest distance to its parent of
    lower order and to its neighbours of the same order at the next larger
    and the next smaller step, so a value that only agrees with itself
    across a kink or a singularity is not chosen. An entry with no such
    neighbour (the highest order at the last level) counts its parent's last
    move too: its distance to its parent is that move over ``4**j - 1``,
    small whether or not the error is a power series in ``h**2``, and near a
    jump of the second derivative (a sum of ELU units) it is not: the error
    goes as ``h**p``, ``1 < p < 2``, and the estimate fell 8 to 60 times
    below it (tests/gradcheck/test_second_derivative_kinks.py).
    """
    with np.errstate(over="ignore", invalid="ignore"):   # (inf - inf: NaN, never chosen)
        values, noise = _tableau(diffs, noises)
    best, best_err = out if out is not None else (np.empty_like(diffs[0]),
                                                  np.empty_like(diffs[0]))
    first = True
    for k in range(1, len(values)):
        for j in range(1, len(values[k])):
            value = values[k][j]
            err = truncation(values, k, j, best_err if first else None)
            err += noise[k][j]
            # (every term is at least 0: NaN is the one non-finite value not yet inf)
            np.copyto(err, np.inf, where=np.isnan(err))
            if first:   # (taken wherever its estimate is finite)
                np.copyto(best, value)
                np.copyto(best, np.nan, where=err == np.inf)
                first = False
                continue
            better = err < best_err
            np.copyto(best, value, where=better)
            np.copyto(best_err, err, where=better)
    if first:   # (one level: nothing to extrapolate)
        best.fill(np.nan)
        best_err.fill(np.inf)
    return best, best_err


def truncation(values: list, k: int, j: int, out=None) -> np.ndarray:
    """The truncation estimate of tableau entry ``values[k][j]`` (``extrapolate``'s):
    its largest distance to its parent and to its same-order neighbours, or,
    with none (the highest order at the last level), to its parent and its
    parent's last move, which it extrapolates (into ``out`` when given)."""
    value = values[k][j]
    err = np.subtract(value, values[k][j - 1], out=out)
    err = np.abs(err, out=err)
    lone = True
    for other in (k - 1, k + 1):
        if 0 <= other < len(values) and j < len(values[other]):
            err = np.maximum(err, np.abs(value - values[other][j]), out=err)
            lone = False
    if lone:
        err = np.maximum(err, np.abs(values[k][j - 1] - values[k - 1][j - 1]), out=err)
    return err


def _converged(problem: Problem, result: dict) -> np.ndarray:
    """Per coordinate (row), whether every estimate is ``CONVERGED`` times
    below the precise tolerance's relative allowance (then the smaller steps
    are skipped)."""
    eps = max(problem.epsilon(out_idx=o) for o in problem.float_out)
    target = CONVERGED * np.sqrt(eps) / 2
    scale = np.max([largest_finite(best, axis=1) for best, _ in result.values()], axis=0)
    return np.all([np.all(err <= target * (np.abs(best) + scale[:, None]), axis=1)
                   for best, err in result.values()], axis=0)


def _extrapolated(problem: Problem, diffs: list, noises: list, last: dict, budget: int,
                  out: dict | None = None) -> dict:
    """``extrapolate`` for every output, a piece of its coordinates at a time
    (it is elementwise: the pieces give what the whole would), the levels at
    and before each entry's last break (``last``, see ``_straddling``) set to
    NaN in the piece (no copy of the whole is made); written into ``out``
    (by output, the values and errors) when given."""
    found = {}
    for o in diffs[0]:
        found[o] = out[o] if out is not None else tuple(np.empty_like(diffs[0][o])
                                                        for _ in range(2))
        size = diffs[0][o].shape[-1]
        for a, b in budgets.chunks(size, _piece(diffs[0][o], len(diffs), budget)):
            extrapolate(_marked([d[o][:, a:b] for d in diffs], last.get(o), a, b),
                        [n[o][:, a:b] for n in noises], tuple(q[:, a:b] for q in found[o]))
    return found


def _marked(levels: list, last, a: int, b: int) -> list:
    """``levels`` (pieces ``a:b`` of an output's quotients) with those at and
    before the last break of their entry set to NaN."""
    if last is None:
        return levels
    piece = last[:, a:b]
    return [np.where(piece >= k, np.nan, level) for k, level in enumerate(levels)]


def step_scale(x: np.ndarray) -> np.ndarray:
    """The first step ``h_0`` of each coordinate of ``x`` (real coordinates)."""
    # at an infinite coordinate x + h is x for any finite h: the floor step
    return np.maximum(np.where(np.isfinite(x), np.abs(x), 0.0), SIZE_FLOOR) / 32.0


def level_steps(h0: np.ndarray) -> np.ndarray:
    """Steps ``h_0 * 2**-k`` by level (rows, ``DEEPEST`` of them) and column
    (``h0``'s entries)."""
    return h0[None, :] * 2.0 ** -np.arange(DEEPEST)[:, None]


def _steps(x: np.ndarray) -> np.ndarray:
    """Steps ``h_k`` by level (rows) and coordinate (columns)."""
    return level_steps(step_scale(x))


def _straddling(diffs: list, noises: list, budget: int) -> tuple:
    """Per output, the last level at which each entry's quotients ``diffs``
    break (``None`` where none does: nothing is discarded), and per
    (coordinate, output coordinate) whether fewer than ``CLEAN`` levels are
    left below its last break (``unresolved``).

    A smooth function's difference quotients settle as ``h`` halves: each one
    moves less than the one before (by 4 once the ``h**2`` term leads). A
    step across a jump ``J`` gives ``f(x + h) - f(x - h) ~ J`` whatever ``h``,
    so the quotient moves by more and more, and then drops when the step no
    longer reaches the jump; a staircase (``round(x, 3)``) even looks like a
    line of slope 1 to steps much wider than its stairs. A *break* is a move
    ``GROWTH`` times larger than every move since the last break (and well
    above rounding noise): the levels at and before it straddle something
    and are no evidence of the derivative, which is the limit of the levels
    after (``_extrapolated`` discards them). The floor of a move is the
    output's largest rounding noise: a quotient that noise dominates doubles
    as ``h`` halves, as a jump's does.
    """
    breaks, unresolved = {}, {}
    levels = len(diffs)
    for o in diffs[0]:
        unresolved[o] = np.zeros(diffs[0][o].shape, bool)
        if levels < 3:   # a break is a move larger than an earlier one: none in one move
            continue
        # an entry that cancels to almost nothing (a convolution's) rounds like
        # its terms: the output's largest noise is the floor, not its own
        n = np.stack([np.max(level[o], axis=-1, keepdims=True, initial=0.0)
                      for level in noises])  # (an empty output has no noise)
        size = diffs[0][o].shape[-1]
        parts = [_last_break([level[o][:, a:b] for level in diffs], n)
                 for a, b in budgets.chunks(size, _piece(diffs[0][o], levels, budget))]
        if not parts:
            continue
        last = np.concatenate(parts, axis=-1).astype(np.int8)   # (levels < 128)
        if last.max(initial=-1) >= 0:
            breaks[o] = last
            unresolved[o] = (last >= 0) & (levels - 1 - last < CLEAN)
    return breaks, unresolved


def _piece(block: np.ndarray, levels: int, budget: int) -> int:
    """Output coordinates per piece of the elementwise tableau work, so that
    its temporaries (a value and a noise per level and order, and a few
    more) stay small whatever the output size: ``PIECE`` entries per level,
    fewer when a share of the budget does not hold the tableau of that many."""
    tableau = budgets.BYTES * 2 * (ORDERS + 2) * max(1, levels)
    entries = min(PIECE, max(1, budget // budgets.SHARE // tableau))
    return max(1, entries // max(1, block.shape[0]))


def _last_break(levels: list, noise: np.ndarray) -> np.ndarray:
    """The last level at which the quotients ``levels`` (each (columns,
    outputs)) break (see ``_straddling``), or -1; ``noise``: per level and
    column, the output's largest rounding noise."""
    d = np.stack(levels)
    last = np.full(d.shape[1:], -1)
    with np.errstate(invalid="ignore"):
        moves = np.abs(d[1:] - d[:-1])
        floor = SIGNIFICANT * (noise[1:] + noise[:-1])
        since = moves[0] if len(levels) > 1 else None
        for k in range(1, len(levels) - 1):
            broke = moves[k] > GROWTH * since + floor[k]
            last = np.where(broke, k, last)
            since = np.where(broke, moves[k], np.fmax(since, moves[k]))
    return last


def extrapolated_columns(ev: Evaluator, in_idx: int, steps: np.ndarray,
                         directions=None, columns=None, out: dict | None = None) -> tuple:
    """``columns_work``'s result, its evaluations made as they come."""
    return evaluated(ev, columns_work(ev, in_idx, steps, directions, columns, out))


def columns_work(ev: Evaluator, in_idx: int, steps: np.ndarray,
                 directions=None, columns=None, out: dict | None = None):
    """A generator of its evaluations (``quotients.evaluated``) returning
    (value, error) per output, each (coordinates, output size), for the
    columns of ``steps``, and per output where no step was free of a jump
    (``unresolved``): along ``directions[j]`` (one real vector per column,
    moved by ``steps[k, j]``) if given, else on coordinates ``columns``
    (default: every coordinate of input ``in_idx`` in order); the values and
    errors are written into ``out`` (by output, two such arrays) when given.

    Phases, each one stacked evaluation of the coordinates still open: the
    first ``AGREE_LEVELS`` steps, which settle coordinates whose quotients
    already agree to rounding (``_agree``) and with the sentinel, the
    smallest of ``LEVELS`` (a staircase can give equal quotients at two wide
    steps; ``sentinel.first`` takes it a group of such columns at a time, and
    alone for every other that would stop; the rest get theirs with the next
    levels, in their evaluation); then up to ``FIRST_LEVELS``; coordinates not converged, or
    disagreeing with the sentinel (a staircase converges to its slope at
    wide steps), or whose smallest steps straddle a jump, get all
    ``LEVELS``; those still straddling one get more, down to ``DEEPEST``,
    until ``CLEAN`` levels below it are free of it (``_straddling`` drops
    the levels before a break). The extrapolation is elementwise, so all
    coordinates at once give what one at a time gives.

    Where a phase's quotients of every output coordinate would not fit in a share of the
    budget (a probe of a million outputs), they go a window of output coordinates at a
    time (``_windows``; the noise floors and stopping rules then see the window's): the
    first phase's sized for its levels alone, each evaluating the function again (most
    columns of a smooth function settle there), split further for a deeper phase."""
    p, n = ev.problem, steps.shape[1]
    sizes = {o: p.layout.out_size(o) for o in p.float_out}
    # (every entry is written by the first phase, into ``out`` when given)
    result = {o: list(out[o]) if out is not None else [np.empty((n, m)), np.empty((n, m))]
              for o, m in sizes.items()}
    unresolved = {o: np.zeros((n, m), bool) for o, m in sizes.items()}
    if n == 0:
        return {o: (np.zeros_like(r[0]),) * 2 for o, r in result.items()}, unresolved
    source = (in_idx, steps, directions, columns)
    for o, (a, b), window in _windows(ev, None, sizes, n, AGREE_LEVELS) or [(None, (0, 0), None)]:
        found = (result, unresolved) if window is None else \
            ({o: [r[:, a:b] for r in result[o]]}, {o: unresolved[o][:, a:b]})
        # the groups' sentinel moves go with the first levels; each column's own
        # sentinel comes once those tell which columns need it
        parts, weights, moves = sentinels.grouped(source, LEVELS - 1, p.layout.in_size(in_idx))
        diffs, noises = yield from differences_of(ev, *source, window)(_AGREE, np.arange(n),
                                                                       moves)
        group = (parts, weights, (diffs.pop(), noises.pop()))
        yield from _phases(ev, source, window, (diffs, noises, None), np.arange(n),
                           AGREE_LEVELS, found, group)
        del diffs, noises, group   # (before the next window's)
    return {o: tuple(r) for o, r in result.items()}, unresolved


def _windows(ev: Evaluator, window, sizes: dict, columns: int, levels: int):
    """``budget.windows`` for ``levels`` levels' quotients and noise (and a copy
    of either) of ``columns`` columns of the window's ``sizes`` output coordinates."""
    per_coordinate = max(1, columns) * budgets.BYTES * 3 * (levels + 1)
    return budgets.windows(ev.budget, sizes, per_coordinate, window)


def _phases(ev: Evaluator, source: tuple, window, levels: tuple, active, depth: int,
            found: tuple, group: tuple | None = None):
    """(A generator: see ``quotients.evaluated``.) The phases from ``depth``
    levels on, for the columns ``active`` of the output coordinates ``window``,
    written into ``found`` (values, errors, unresolved); a phase whose levels
    would not fit (``_windows``) goes a part of the window at a time, the levels
    so far sliced (no evaluation repeated). ``group``: the first phase's grouped
    sentinels (every column active; see ``sentinel.first``)."""
    problem, (diffs, noises, sentinel), (result, unresolved) = ev.problem, levels, found
    rounding = unit_rounding(ev, source[0], window)   # (measured with the first levels)
    while active.size:
        noises, breaks, straddled = _steady(ev, diffs, noises, source[1][:, active], rounding)
        whole = active.size == len(next(iter(result.values()))[0])   # (then no copies)
        found = _extrapolated(problem, diffs, noises, breaks, ev.budget, result if whole else None)
        for o, (best, err) in ({} if whole else found).items():
            result[o][0][active], result[o][1][active] = best, err
        if depth >= DEEPEST:   # no step was free of the jump: no evidence there
            for o, u in straddled.items():
                unresolved[o][active] = u
                result[o][0][active] = np.where(u, np.nan, result[o][0][active])
                result[o][1][active] = np.where(u, np.inf, result[o][1][active])
            break
        current = {o: (r[0], r[1]) if whole else (r[0][active], r[1][active])
                   for o, r in result.items()}
        if depth == AGREE_LEVELS:
            settled = ~_jumpy(straddled, active.size) & _agree(diffs, noises)
            if group is not None:   # (the top call's first phase: no sentinel yet)
                sentinel = sentinels.first(ev, source, window, current, settled, LEVELS - 1,
                                           group)
                if isinstance(sentinel, np.ndarray):   # (the columns that need their own)
                    sentinel = yield from sentinels.own_work(ev, source, window, sentinel,
                                                             LEVELS - 1)
            keep = ~settled if sentinel is None or sentinel is sentinels.DEFERRED else \
                ~settled | sentinels.disagree(sentinels.rounding(problem, current), current,
                                              sentinel, active)
        else:
            keep = _open(problem, depth, straddled, sentinel, current, active, (diffs, noises))
        keep = np.flatnonzero(keep)
        if not keep.size:
            break
        if keep.size < active.size:   # (else no copy)
            diffs = [{o: d[o][keep] for o in d} for d in diffs]
            noises = [{o: v[o][keep] for o in v} for v in noises]
        active = active[keep]
        after = {AGREE_LEVELS: FIRST_LEVELS}.get(depth, min(max(LEVELS, depth + JUMP_LEVELS),
                                                             DEEPEST))   # (as _deeper goes)
        sizes = {o: q.shape[-1] for o, q in diffs[0].items()}
        if (parts := _windows(ev, window, sizes, active.size, after)) is not None:
            if sentinel is sentinels.DEFERRED:   # (the parts judge their columns by it)
                sentinel = yield from sentinels.own_work(ev, source, window, active, LEVELS - 1)
            for o, (a, b), part in parts:
                views = ([{o: d[o][:, a:b]} for d in diffs], [{o: v[o][:, a:b]} for v in noises],
                         tuple({o: s[o][:, a:b]} for s in sentinel))
                yield from _phases(ev, source, part, views, active, depth,
                                   ({o: [r[:, a:b] for r in result[o]]},
                                    {o: unresolved[o][:, a:b]}))
            return
        extra, extra_noise, depth, sentinel = yield from _deeper(
            differences_of(ev, *source, window), depth, active, sentinel, source[1].shape[1])
        diffs, noises = diffs + extra, noises + extra_noise


def _steady(ev: Evaluator, diffs: list, noises: list, steps: np.ndarray,
            rounding: dict | None = None) -> tuple:
    """``noises`` raised by the rounding stairs the quotients show and by the
    outputs' measured ``rounding`` beyond the floor's cap (``stairs``: a no-op
    until a phase goes deep), and the breaks they leave (``_straddling``)."""
    noises = stair_noise(ev, diffs, noises, steps, rounding)
    return (noises, *_straddling(diffs, noises, ev.budget))


def _open(problem: Problem, depth: int, straddled: dict, sentinel, current: dict,
          active, levels: tuple) -> np.ndarray:
    """Per active coordinate, whether it needs smaller steps after ``depth``
    levels, beyond the first phase (see ``extrapolated_columns``); ``levels``:
    the quotients and their noise so far."""
    jumpy = _jumpy(straddled, active.size)
    if depth < LEVELS:
        eps = sentinels.rounding(problem, current)
        jumpy |= ~_converged(problem, current) | sentinels.disagree(eps, current, sentinel, active)
    elif depth == LEVELS:   # (deeper, the steps went down for a jump already)
        jumpy |= _moving(problem, *levels, current)
    return jumpy


def _moving(problem: Problem, diffs: list, noises: list, current: dict) -> np.ndarray:
    """Per coordinate (row), whether an entry not converged (``_converged``)
    still moves at the smallest step by more than the quotients' noise and the
    precise tolerance's relative allowance, while the function's move over
    the step shrinks with it: the steps have not reached the width of what
    the function does there, and smaller ones are taken as for a jump. A
    clamp active within ``1e-7`` of the point (geoopt's ``dist0`` near the
    ball's edge: flat within reach, ``artanh`` steeply beyond) gives
    quotients that grow as the steps shrink, by less than a break, down to
    where they are 0; the last of ``LEVELS`` were kept as a resolved slope
    of 3.8e5, within an estimate of 10 %. A smooth function's quotients have
    settled there; rounding noise, even where its measured noise is too
    small, moves the function as much at any step (its quotients double as
    the step halves, or fall to 0, or change sign)."""
    eps = max(problem.epsilon(out_idx=o) for o in problem.float_out)
    moving = []
    for o, (best, err) in current.items():
        last, before = diffs[-1][o], diffs[-2][o]
        with np.errstate(invalid="ignore", over="ignore"):   # (quotients up to 1e300)
            # (the output's largest noise, as ``_straddling`` takes it)
            noise = sum(np.max(level[o], axis=-1, keepdims=True, initial=0.0)
                        for level in noises[-2:])
            allowed = np.sqrt(eps) / 2 * (np.abs(best) + largest_finite(best, axis=1)[:, None])
            move = np.abs(last - before)
            found = (move > SIGNIFICANT * noise) & (move > allowed) & (err > CONVERGED * allowed)
            found &= (last * before > 0) & (np.abs(last) < 2 * np.abs(before))
        moving.append(np.any(found, axis=1))
    return np.any(moving, axis=0)


def _jumpy(straddled: dict, count: int) -> np.ndarray:
    """Per coordinate, whether its smallest steps straddle a jump in some output."""
    return np.any([u.any(axis=1) for u in straddled.values()] or [np.zeros(count, bool)], axis=0)


def _deeper(differences, depth: int, active, sentinel, count: int):
    """(A generator: see ``quotients.evaluated``.)
    The next phase's levels for the coordinates ``active`` (of ``count``):
    (their differences, their noise, the new depth, the sentinel by
    coordinate, evaluated with the levels when ``sentinel.first`` deferred it)."""
    if depth == AGREE_LEVELS and sentinel is sentinels.DEFERRED:
        extra, extra_noise = yield from differences(_SECOND_AND_SENTINEL, active, tail=1)
        sentinel = sentinels.spread((extra.pop(), extra_noise.pop()), active, count)
        return extra, extra_noise, FIRST_LEVELS, sentinel
    if depth == AGREE_LEVELS:
        extra, extra_noise = yield from differences(_SECOND, active)
        return extra, extra_noise, FIRST_LEVELS, sentinel
    if depth < LEVELS:   # the sentinel is the last of them
        extra, extra_noise = yield from differences(slice(depth, LEVELS - 1), active)
        extra.append({o: v[active] for o, v in sentinel[0].items()})
        extra_noise.append({o: v[active] for o, v in sentinel[1].items()})
        return extra, extra_noise, LEVELS, sentinel
    deeper = min(depth + JUMP_LEVELS, DEEPEST)
    extra, extra_noise = yield from differences(slice(depth, deeper), active)
    return extra, extra_noise, deeper, sentinel


def _agree(diffs: list, noises: list) -> np.ndarray:
    """Per coordinate (row), whether the quotients of the first two steps agree
    within their rounding noise in every output coordinate.

    ``D(h) = f' + c2 h**2 + c4 h**4 + ...``: two steps a factor of 2 apart that
    agree to rounding leave a truncation error of the extrapolated value far
    below its noise (a linear or quadratic function's quotient is exact at any
    step), and the error estimate still counts their difference. A staircase,
    a jump within reach of a step, or curvature moves the quotient by more
    than rounding and opens the coordinate for the next phase (with its
    sentinel). The noise is the output's largest (see ``_straddling``).
    """
    agree = None
    for o in diffs[0]:
        floor = sum(np.max(level[o], axis=-1, initial=0.0) for level in noises[:2])
        with np.errstate(invalid="ignore"):
            move = np.max(np.abs(diffs[1][o] - diffs[0][o]), axis=-1, initial=0.0)
            # (NaN, a step out of the domain, never agrees)
            here = (move <= floor) & ~np.isnan(move)
        agree = here if agree is None else agree & here
    return agree
