"""A second ladder of steps where a coordinate's magnitude misleads the first.

Richardson's ladder (``richardson``) takes its steps from the coordinate's
magnitude, assuming the function varies on that scale. Two kinds of
coordinate get steps of another scale too, and each entry keeps the ladder
that resolves it:

- far below the first ladder's floor (``smallsteps``): steps of the
  coordinate's own size, for ``log``, ``1/x`` or ``sqrt(x*x + s*s)`` at 1e-9;
- far above a unit (``largesteps``): steps of a unit coordinate, for ``sin``
  of an angle of 1e6 or ``tanh(x - c)`` near a large ``c``.

An entry takes the second ladder's value where it is credible (finite,
resolved, its estimate at most ``CREDIBLE`` of the entry and the ladder's
largest entry together, or of the order of the block's rounding) and either
the first ladder has none (NaN, no step free of a jump) or the two disagree
beyond both estimates: a derivative is
the limit of smaller steps, and the smaller ladder's estimate says it is not
rounding. Where they agree, the smaller estimate stands, as within one
ladder. A step the output cannot feel (``x + 1`` at ``1e-150``) gives the
second ladder a rounding estimate far above its value: not credible, not
taken; nor is a move of the output below the smallest normal number,
rounded in absolute terms the estimate does not see (``prod`` with an entry
of 1e-308 moves by 0).
``CREDIBLE`` is loose because the estimate is: the output's measured noise
floor over a step of 1e-11 made it a thousand times the actual error (the
entropy of 3,000 probabilities, the smallest near 1e-10: 3e-3 of the entry,
where the closed form -(log p + 1) differs by 2e-6); what it admits is
judged at the tolerance it implies, and an entry it refuses stays as the
first ladder left it.
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.core.coords import largest_finite
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.numerics import largesteps, smallsteps
from adcheck.gradcheck.numerics.noisefloor import holds_large
from adcheck.gradcheck.numerics.precise import AD_ULPS, SAFETY
from adcheck.gradcheck.numerics.richardson import _steps, columns_work

CREDIBLE = 1e-2      # an estimate beyond this share of its entry is no evidence: its
#                      tolerance, SAFETY times the estimate, would be 8 % of it and more


def coordinates_work(ev: Evaluator, in_idx: int, x: np.ndarray, columns: np.ndarray,
                     out: dict | None = None):
    """A generator of evaluations (``quotients.evaluated``) returning
    ``richardson.columns_work``'s result for the coordinates ``columns`` of
    input ``in_idx``, whose values are ``x`` (into ``out`` when given), with
    the entries the second ladder of the small and the large ones resolves
    differently replaced (see the module's docstring)."""
    result = yield from columns_work(ev, in_idx, _steps(x), columns=columns, out=out)
    small = smallsteps.small_coordinates(x)
    if small.size:
        first = smallsteps.first_steps(x[small])
        second = yield from smallsteps.ladder(ev, in_idx, first, columns=columns[small])
        judged(ev.problem, result, small, second, first)
    large = largesteps.unit_coordinates(x, holds_large(ev, in_idx), smallsteps.FLOOR)
    if large.size:
        first = largesteps.first_steps(x[large], ev.problem.epsilon(in_idx=in_idx))
        second = yield from largesteps.ladder(ev, in_idx, first, columns[large])
        judged(ev.problem, result, large, second, first, unit_ladder=True)
    return result


def directions_work(ev: Evaluator, in_idx: int, steps: np.ndarray, directions: np.ndarray,
                    out: dict | None = None):
    """``coordinates_work`` for steps along ``directions`` (a row per column,
    moved by ``steps[k, j]``: a compressed or probed Jacobian's seed
    columns), with the small coordinates' second ladders
    (``smallsteps.seed_ladders``). Not the large ones': a unit's steps
    along a seed column move its coordinates by amounts their spacing does
    not hold exactly, and the rounding of each move is an error of the
    quotient no estimate here measures. The first ladder's cells are then
    less precise where the input's entries are far above a unit (``sin`` at
    1e9: errors above 2e-6 resolved), and such a pass is judged again on
    whole Jacobians (``gradcheck.large.resolved``)."""
    result = yield from columns_work(ev, in_idx, steps, directions, out=out)
    for chosen, first, second in (yield from smallsteps.seed_ladders(ev, in_idx, steps,
                                                                     directions)):
        judged(ev.problem, result, chosen, second, first)
    return result


def judged(problem, result: tuple, rows: np.ndarray, second: tuple, first: np.ndarray,
           unit_ladder: bool = False) -> None:
    """Take into ``result`` (rows ``rows``) the entries of ``second`` that are
    credible and that ``result`` lacks, disagrees with or estimates less
    precisely (module docstring); ``first``: the second ladder's first step
    per row. ``unit_ladder`` (the second ladder of large coordinates): where
    an entry that is not credible lies farther from the first ladder's than
    both estimates reach, every usable entry of the block is taken: the first
    ladder's steps, wider than a period of structure of a unit's width,
    average that structure away with a small estimate. ``x + sin(x)`` at
    1e12, whose output's rounding (1.2e-4) leaves the unit ladder estimates
    of 4e-2 to 2e-1 (its values were within 3e-4 of 1 + cos(x)), kept the
    first ladder's 1 +- 1e-9: the right formula failed, and a backward
    missing the cos term passed. Taken, each entry is judged within its own
    wide estimate."""
    found, first_unresolved = result
    values, unresolved = second
    for o in problem.float_out:
        eps = problem.epsilon(out_idx=o)
        value, error = values[o]   # (rows, output coordinates)
        ulps = AD_ULPS * eps * largest_finite(found[o][0])
        # (of the ladder's largest entry too: a small entry of a large output, its
        # rounding over these steps the same as its neighbours', is no less known)
        reach = CREDIBLE * (np.abs(value) + largest_finite(value)) + ulps
        credible = np.isfinite(value) & ~unresolved[o] & (error <= reach)
        # a move below the smallest normal number is rounded in absolute terms, which
        # the estimate (relative to the outputs) does not see: prod at 1e-308 moves by 0
        credible &= np.abs(value) * first[:, None] >= np.finfo(np.float64).tiny
        if credible.any() or unit_ladder:
            usable = np.isfinite(value) & np.isfinite(error) & ~unresolved[o]
            _take((*found[o], first_unresolved[o]), rows, (value, error), credible,
                  np.sqrt(eps) / 2 * np.abs(value) + ulps, usable if unit_ladder else None)


def _take(first: tuple, rows: np.ndarray, second: tuple, credible: np.ndarray,
          allowance: np.ndarray, contradicting: np.ndarray | None = None) -> None:
    """Write ``second``'s credible entries that ``first`` lacks, disagrees with
    or estimates less precisely into ``first``'s rows ``rows`` (its values,
    errors and unresolved flags); and of the entries ``contradicting`` marks,
    those apart from ``first``'s beyond both estimates (``judged``)."""
    values, errors, unresolved = first
    value, error = second
    missing = ~np.isfinite(values[rows]) | ~np.isfinite(errors[rows]) | unresolved[rows]
    with np.errstate(invalid="ignore"):
        apart = np.abs(value - values[rows]) > SAFETY * (error + errors[rows]) + allowance
    # (and where both agree, the smaller estimate, as within one ladder: the wide
    # steps' quotients of a column whose steps crossed zero are finite for some
    # outputs, but no better than their large estimate)
    taken = credible & (missing | apart | (error < errors[rows]))
    if contradicting is not None:
        # apart beyond the two estimates themselves: the values cannot both be within
        # them, and the first ladder's steps are the ones that cross the structure; one
        # such entry shows the function has structure of a unit's width here, which
        # every wide step of the block averages away, agreeing or not
        with np.errstate(invalid="ignore"):
            contradicted = np.abs(value - values[rows]) > error + errors[rows] + allowance
        if np.any(contradicting & contradicted & ~missing):
            taken |= contradicting & ~missing
    which, entries = np.nonzero(taken)
    values[rows[which], entries] = value[which, entries]
    errors[rows[which], entries] = error[which, entries]
    unresolved[rows[which], entries] = False
