"""Steps on a coordinate's own scale, where it is far below Richardson's first step.

Richardson's first step has a floor (``richardson.step_scale``: at least
``2**-11``) so that near zero a step still moves the output by more than its
rounding: ``x + y`` with ``x = 1e-20`` and ``y = 1`` is differenced at steps
``y`` can feel. But a function that varies on the coordinate's own scale is
then differenced across its structure: ``log``, ``sqrt`` or ``x log x`` at
``1e-7`` (every step leaves the domain), ``1/x`` or ``x / sum(x)`` at
``1e-14`` (every step straddles the pole or the sign change), ``sqrt(x*x +
1e-300)`` at ``1e-150`` (every step averages ``|x|``'s slopes to zero, a
converged and wrong value). Correct formulas failed there, with a statement
that the function is undefined nearby or does not use its input.

So each real coordinate with ``0 < |x| < FLOOR`` gets a second ladder, its
first step ``|x| / SHARE``: a quarter, within which a function singular at 0
is still smooth, and wide enough that the output's rounding over it stays
small (the entropy of 3,000 probabilities, the smallest near 1e-10, and its
sum's rounding). An entry takes that ladder's value where it is credible
(finite, resolved, its estimate at most ``CREDIBLE`` of the entry or of the
order of the block's rounding) and either the first ladder has none (NaN,
no step free of a jump) or the two disagree beyond both estimates: a
derivative is the limit of smaller steps, and the smaller ladder's estimate
says it is not rounding. Where they agree, the smaller estimate stands, as
within one ladder. A step the output cannot feel (``x + 1`` at ``1e-150``)
gives the smaller ladder a rounding estimate far above its value: not
credible, not taken; nor is a move of the output below the smallest normal
number, rounded in absolute terms the estimate does not see (``prod`` with
an entry of 1e-308 moves by 0).
``CREDIBLE`` is loose because the estimate is: the output's measured noise
floor over a step of 1e-11 made it a thousand times the actual error (the
entropy above: 3e-3 of the entry, where the closed form -(log p + 1) differs by
2e-6); what it admits is judged at the tolerance it implies, and an entry
it refuses stays as the first ladder left it.

A compressed or probed Jacobian steps along seed columns, each moving many
coordinates (``directions_work``): a column that moves small ones is
differenced again with its steps shrunk until none of them moves by more
than a quarter of itself, a ladder per band of magnitudes (``BAND``).
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.core import coords
from adcheck.gradcheck.core.coords import largest_finite
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.numerics.precise import AD_ULPS, SAFETY
from adcheck.gradcheck.numerics.richardson import _steps, columns_work, level_steps

FLOOR = 2.0 ** -11   # Richardson's smallest first step; smaller coordinates get a ladder too
SHARE = 4.0          # the coordinate over the first step (Richardson's own ladder: 32)
BAND = 2.0 ** 20     # small coordinates this far apart get separate ladders along a seed column
CREDIBLE = 1e-2      # an estimate beyond this share of its entry is no evidence: its
#                      tolerance, SAFETY times the estimate, would be 8 % of it and more


def small_coordinates(x: np.ndarray) -> np.ndarray:
    """Indices of the real coordinates ``x`` that are nonzero, finite and
    below ``FLOOR``."""
    size = np.abs(x)
    return np.flatnonzero((size > 0) & (size < FLOOR))


def coordinates_work(ev: Evaluator, in_idx: int, x: np.ndarray, columns: np.ndarray,
                     out: dict | None = None):
    """A generator of evaluations (``quotients.evaluated``) returning
    ``richardson.columns_work``'s result for the coordinates ``columns`` of
    input ``in_idx``, whose values are ``x`` (into ``out`` when given), with
    the entries the second ladder of the small ones resolves differently
    replaced (see the module's docstring)."""
    result = yield from columns_work(ev, in_idx, _steps(x), columns=columns, out=out)
    small = small_coordinates(x)
    if small.size:
        first = np.abs(x[small]) / SHARE
        second = yield from second_ladder(ev, in_idx, first, columns=columns[small])
        _judged(ev.problem, result, small, second, first)
    return result


def directions_work(ev: Evaluator, in_idx: int, steps: np.ndarray, directions: np.ndarray,
                    out: dict | None = None):
    """``coordinates_work`` for steps along ``directions`` (a row per column,
    moved by ``steps[k, j]``: a compressed or probed Jacobian's seed columns).
    A column that moves small coordinates is differenced again with its
    steps shrunk until none of them moves by more than ``|x| / SHARE``; every
    coordinate of the column moves less then, and its cells are the same
    directional derivatives. Small coordinates a factor ``BAND`` or more
    apart get a ladder each (the smaller one's steps would be lost in the
    larger one's rounding), and the entries a wider coordinate decides are
    kept where a second ladder is not credible for them."""
    result = yield from columns_work(ev, in_idx, steps, directions, out=out)
    size = np.abs(coords.to_real(ev.problem.arrays[in_idx]))
    small = small_coordinates(size)
    if small.size == 0:
        return result
    size = size[small]
    band = np.floor(np.log2(size) / np.log2(BAND))
    moved = np.abs(directions[:, small]) * steps[0][:, None]   # (columns, small ones), first step
    for value in np.unique(band):
        with np.errstate(divide="ignore"):
            shrink = np.where((band == value) & (moved > 0), size / SHARE / moved,
                              np.inf).min(axis=1)
        chosen = np.flatnonzero(shrink < 1)
        if chosen.size:
            first = steps[0][chosen] * shrink[chosen]
            second = yield from second_ladder(ev, in_idx, first, directions=directions[chosen])
            _judged(ev.problem, result, chosen, second, first)
    return result


def second_ladder(ev: Evaluator, in_idx: int, first: np.ndarray, columns=None, directions=None):
    """``richardson.columns_work`` of the coordinates ``columns`` (or along
    ``directions``) from the first steps ``first``."""
    return (yield from columns_work(ev, in_idx, level_steps(first), directions, columns))


def _judged(problem, result: tuple, rows: np.ndarray, second: tuple, first: np.ndarray) -> None:
    """Take into ``result`` (rows ``rows``) the entries of ``second`` that are
    credible and that ``result`` lacks, disagrees with or estimates less
    precisely (module docstring); ``first``: the second ladder's first step
    per row."""
    found, first_unresolved = result
    values, unresolved = second
    for o in problem.float_out:
        eps = problem.epsilon(out_idx=o)
        value, error = values[o]   # (rows, output coordinates)
        ulps = AD_ULPS * eps * largest_finite(found[o][0])
        credible = np.isfinite(value) & ~unresolved[o] & (error <= CREDIBLE * np.abs(value) + ulps)
        # a move below the smallest normal number is rounded in absolute terms, which
        # the estimate (relative to the outputs) does not see: prod at 1e-308 moves by 0
        credible &= np.abs(value) * first[:, None] >= np.finfo(np.float64).tiny
        if credible.any():
            _take((*found[o], first_unresolved[o]), rows, (value, error), credible,
                  np.sqrt(eps) / 2 * np.abs(value) + ulps)


def _take(first: tuple, rows: np.ndarray, second: tuple, credible: np.ndarray,
          allowance: np.ndarray) -> None:
    """Write ``second``'s credible entries that ``first`` lacks, disagrees with
    or estimates less precisely into ``first``'s rows ``rows`` (its values,
    errors and unresolved flags)."""
    values, errors, unresolved = first
    value, error = second
    missing = ~np.isfinite(values[rows]) | ~np.isfinite(errors[rows]) | unresolved[rows]
    with np.errstate(invalid="ignore"):
        apart = np.abs(value - values[rows]) > SAFETY * (error + errors[rows]) + allowance
    # (and where both agree, the smaller estimate, as within one ladder: the wide
    # steps' quotients of a column whose steps crossed zero are finite for some
    # outputs, but no better than their large estimate)
    which, entries = np.nonzero(credible & (missing | apart | (error < errors[rows])))
    values[rows[which], entries] = value[which, entries]
    errors[rows[which], entries] = error[which, entries]
    unresolved[rows[which], entries] = False
