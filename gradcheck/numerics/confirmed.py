"""Finite differences confirmed by smaller steps: for the columns of a failure.

A precise check stops differencing a column once its extrapolated entries
agree over the first four steps (``richardson``). Steps that reach kinks of
the second derivative can fool that: a Gauss-Legendre quadrature of an ELU
network (zuko's UNAF), whose units switch between the quadrature's nodes
within ``h_0``, gave quotients following ``L + c h**2`` to four digits over
those steps with ``L`` 6.2e-11 off the derivative, so that every
extrapolation of them agreed with the others to 1e-14 and the check failed
a right gradient (at 2 times its tolerance). Nothing measured at those steps
can tell such an ``L`` from a derivative. Smaller steps can: once they no
longer reach a kink, their quotients settle on the derivative.

So a failed entry's column is differenced at every level (``k <
LEVELS``, 28 evaluations) and extrapolated as ``richardson.extrapolate``
does, with one more term in each entry's estimate: its distance to every
deeper entry of its order, less that entry's noise. An extrapolation the
smaller steps contradict is then not chosen; where the function is smooth
at every step the deeper entries only confirm it. The second ladders of
tiny and huge coordinates (``secondladder``) are not taken: these columns
are evidence only where their estimate converges (``verdict.confirm``).
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.core import coords
from adcheck.gradcheck.numerics import largesteps, smallsteps
from adcheck.gradcheck.numerics.noisefloor import holds_large, unit_rounding
from adcheck.gradcheck.numerics.quotients import differences_of, evaluated
from adcheck.gradcheck.numerics.richardson import (LEVELS, _marked, _steady, _steps, _tableau,
                                                   truncation)
from adcheck.gradcheck.numerics.scheme import Extrapolated, direction_steps

#: levels at the bottom of the ladder whose steps must lie within a coordinate's
#: own scale for its column's quotients to measure their noise by agreement
RESOLVING = 4


def confirmed(diffs: list, noises: list, agreed=None) -> tuple:
    """Best tableau entry per coordinate and its estimate, each entry's
    estimate counting the deeper entries of its order (module docstring);
    ``agreed`` (per row, or ``None``: none): the rows whose entries may take
    their agreement with their neighbours for their noise (``_noise``)."""
    with np.errstate(over="ignore", invalid="ignore"):   # (inf - inf: NaN, never chosen)
        values, noise = _tableau(diffs, noises)
        best = np.full_like(diffs[0], np.nan)
        best_err = np.full_like(diffs[0], np.inf)
        for k in range(1, len(values)):
            for j in range(1, len(values[k])):
                value = values[k][j]
                err = truncation(values, k, j)
                for deeper in range(k + 2, len(values)):
                    if j < len(values[deeper]):
                        # (a deeper entry's own noise is no evidence against this one)
                        gap = np.abs(value - values[deeper][j]) - \
                            _noise(values, noise, deeper, j, agreed)
                        err = np.maximum(err, gap)
                err = err + _noise(values, noise, k, j, agreed)
                err[np.isnan(err)] = np.inf
                better = err < best_err
                best[better], best_err[better] = value[better], err[better]
    return best, best_err


def _noise(values: list, noise: list, k: int, j: int, agreed) -> np.ndarray:
    """The rounding noise of tableau entry ``values[k][j]``: its propagated bound,
    or, in the rows ``agreed`` where the entry and its same-order neighbours
    agree more closely, their largest distance. The bound counts the output's
    largest rounding, and one output's quotients at 2**-8 to 2**-12 of ``h_0``
    agreed to 1e-13 where it said 4e-11 to 7e-10, leaving a value 4.5e-11 off
    uncontradicted (a random network of the UNAF kind). Rounding moves
    consecutive quotients independently, so their agreement measures it; not
    along a coordinate the deepest steps do not resolve (``_resolved``) nor
    a huge one (their second ladders are not taken here): at 1e-150 the deep
    quotients agreed on a slope that is not the derivative, and a wrong
    formula passed."""
    if agreed is None:
        return noise[k][j]
    spread = None   # (no neighbour: no agreement to measure, the bound stands)
    for other in (k - 1, k + 1):
        if 0 <= other < len(values) and j < len(values[other]):
            gap = np.abs(values[k][j] - values[other][j])
            spread = gap if spread is None else np.maximum(spread, gap)
    if spread is None:
        return noise[k][j]
    return np.where(agreed[:, None], np.fmin(noise[k][j], spread), noise[k][j])


def _resolved(x: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Where the last ``RESOLVING`` levels' moves (``first`` at level 0) are a
    ``smallsteps.SHARE``-th of the coordinate ``x`` or less (or ``x`` is 0):
    there the deep quotients see the function at the coordinate's own scale.
    A tiny coordinate (1e-150) is moved far beyond itself by every step, and
    its deep quotients agree on a slope that is not the derivative; one of
    3e-4 (an ELU network's bias, below the first step's floor of 2**-11) is
    not, and its column's deep quotients measure rounding as any other's."""
    deepest = first * 2.0 ** -(LEVELS - RESOLVING)
    with np.errstate(invalid="ignore"):
        return (x == 0) | (np.abs(x) >= smallsteps.SHARE * deepest)


def confirmed_work(ev, in_idx: int, steps: np.ndarray, directions=None, columns=None,
                   agreed=None):
    """A generator of evaluations (``quotients.evaluated``) returning, by
    output, ``(best, error)`` of the columns of ``steps`` (levels by column;
    along ``directions`` if given, else on coordinates ``columns``), every
    level ``k < LEVELS`` taken, and by output where a column's smallest steps
    straddle a jump (no evidence there: infinite error); ``agreed``:
    ``confirmed``'s, by column."""
    n = steps.shape[1]
    differences = differences_of(ev, in_idx, steps, directions, columns)
    diffs, noises = yield from differences(np.arange(LEVELS), np.arange(n))
    noises, breaks, straddled = _steady(ev, diffs, noises, steps, unit_rounding(ev, in_idx))
    found = {}
    for o in diffs[0]:
        size = diffs[0][o].shape[-1]
        levels = _marked([d[o] for d in diffs], breaks.get(o), 0, size)
        best, err = confirmed(levels, [v[o] for v in noises], agreed)
        err[straddled[o]] = np.inf
        found[o] = (best, err)
    return found, straddled


class Confirmed(Extrapolated):
    """``Extrapolated``'s cells taken at every level, each entry confirmed by
    the smaller steps (``confirmed``): for the columns of a failure."""

    def cells(self, ev, in_idx: int, directions, columns: np.ndarray, out=None) -> dict:
        """``(cells, errors, straddled)`` by output, a row per column, as
        ``Extrapolated.cells`` gives them (``out`` is not written)."""
        x = coords.to_real(ev.problem.arrays[in_idx])
        plain = np.ones(x.size, bool)   # (no huge coordinate's, whose ladder is not taken)
        plain[largesteps.unit_coordinates(x, holds_large(ev, in_idx), smallsteps.FLOOR)] = False
        if directions is None:
            steps = _steps(x[columns])
            agreed = plain[columns] & _resolved(x[columns], steps[0])
            work = confirmed_work(ev, in_idx, steps, columns=columns, agreed=agreed)
        else:
            moved = directions != 0
            agreed = ~np.any(moved & ~(plain & _resolved(x, np.abs(directions))), axis=1)
            work = confirmed_work(ev, in_idx, direction_steps(len(directions)), directions,
                                  agreed=agreed)
        found, straddled = evaluated(ev, work)
        return {o: (best, err, straddled[o]) for o, (best, err) in found.items()}
