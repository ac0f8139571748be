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
from adcheck.gradcheck.numerics.noisefloor import unit_rounding
from adcheck.gradcheck.numerics.quotients import differences_of, evaluated
from adcheck.gradcheck.numerics.richardson import (DEEPEST, LEVELS, _marked, _steady, _steps,
                                                   _tableau, truncation)
from adcheck.gradcheck.numerics.scheme import Extrapolated


def confirmed(diffs: list, noises: list) -> tuple:
    """Best tableau entry per coordinate and its estimate, each entry's
    estimate counting the deeper entries of its order (module docstring)."""
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
                        gap = np.abs(value - values[deeper][j]) - noise[deeper][j]
                        err = np.maximum(err, gap)
                err = err + noise[k][j]
                err[np.isnan(err)] = np.inf
                better = err < best_err
                best[better], best_err[better] = value[better], err[better]
    return best, best_err


def confirmed_work(ev, in_idx: int, steps: np.ndarray, directions=None, columns=None):
    """A generator of evaluations (``quotients.evaluated``) returning, by
    output, ``(best, error)`` of the columns of ``steps`` (levels by column;
    along ``directions`` if given, else on coordinates ``columns``), every
    level ``k < LEVELS`` taken, and by output where a column's smallest steps
    straddle a jump (no evidence there: infinite error)."""
    n = steps.shape[1]
    differences = differences_of(ev, in_idx, steps, directions, columns)
    diffs, noises = yield from differences(np.arange(LEVELS), np.arange(n))
    noises, breaks, straddled = _steady(ev, diffs, noises, steps, unit_rounding(ev, in_idx))
    found = {}
    for o in diffs[0]:
        size = diffs[0][o].shape[-1]
        levels = _marked([d[o] for d in diffs], breaks.get(o), 0, size)
        best, err = confirmed(levels, [v[o] for v in noises])
        err[straddled[o]] = np.inf
        found[o] = (best, err)
    return found, straddled


class Confirmed(Extrapolated):
    """``Extrapolated``'s cells taken at every level, each entry confirmed by
    the smaller steps (``confirmed``): for the columns of a failure."""

    calls = 2 * LEVELS

    def cells(self, ev, in_idx: int, directions, columns: np.ndarray, out=None) -> dict:
        """``(cells, errors, straddled)`` by output, a row per column, as
        ``Extrapolated.cells`` gives them (``out`` is not written)."""
        if directions is None:
            steps = _steps(coords.to_real(ev.problem.arrays[in_idx])[columns])
            work = confirmed_work(ev, in_idx, steps, columns=columns)
        else:
            steps = np.array(np.broadcast_to(2.0 ** -np.arange(DEEPEST)[:, None],
                                             (DEEPEST, len(directions))))
            work = confirmed_work(ev, in_idx, steps, directions)
        found, straddled = evaluated(ev, work)
        return {o: (best, err, straddled[o]) for o, (best, err) in found.items()}
