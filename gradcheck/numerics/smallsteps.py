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
sum's rounding). Its entries are judged against the first ladder's in
``secondladder``.

A compressed or probed Jacobian steps along seed columns, each moving many
coordinates (``seed_ladders``): a column that moves small ones is
differenced again with its steps shrunk until none of them moves by more
than a quarter of itself, a ladder per band of magnitudes (``BAND``).
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.core import coords
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.numerics.richardson import columns_work, level_steps

FLOOR = 2.0 ** -11   # Richardson's smallest first step; smaller coordinates get a ladder too
SHARE = 4.0          # the coordinate over the first step (Richardson's own ladder: 32)
BAND = 2.0 ** 20     # small coordinates this far apart get separate ladders along a seed column


def small_coordinates(x: np.ndarray) -> np.ndarray:
    """Indices of the real coordinates ``x`` that are nonzero, finite and
    below ``FLOOR``."""
    size = np.abs(x)
    return np.flatnonzero((size > 0) & (size < FLOOR))


def first_steps(x: np.ndarray) -> np.ndarray:
    """The second ladder's first step for each (small) coordinate of ``x``."""
    return np.abs(x) / SHARE


def ladder(ev: Evaluator, in_idx: int, first: np.ndarray, columns=None, directions=None):
    """``richardson.columns_work`` of the coordinates ``columns`` (or along
    ``directions``) from the first steps ``first``."""
    return (yield from columns_work(ev, in_idx, level_steps(first), directions, columns))


def seed_ladders(ev: Evaluator, in_idx: int, steps: np.ndarray, directions: np.ndarray):
    """A generator of evaluations (``quotients.evaluated``) returning, per band
    of small coordinates, the seed columns that move them (rows of
    ``directions``, moved by ``steps[k, j]``), their second ladder's first
    steps and its result. A column's steps are shrunk until none of the
    band's coordinates moves by more than ``|x| / SHARE``; every coordinate
    of the column moves less then, and its cells are the same directional
    derivatives. Small coordinates a factor ``BAND`` or more apart get a
    ladder each (the smaller one's steps would be lost in the larger one's
    rounding)."""
    size = np.abs(coords.to_real(ev.problem.arrays[in_idx]))
    small = small_coordinates(size)
    if small.size == 0:
        return []
    size = size[small]
    band = np.floor(np.log2(size) / np.log2(BAND))
    moved = np.abs(directions[:, small]) * steps[0][:, None]   # (columns, small ones), first step
    found = []
    for value in np.unique(band):
        with np.errstate(divide="ignore"):
            shrink = np.where((band == value) & (moved > 0), size / SHARE / moved,
                              np.inf).min(axis=1)
        chosen = np.flatnonzero(shrink < 1)
        if chosen.size:
            first = steps[0][chosen] * shrink[chosen]
            second = yield from ladder(ev, in_idx, first, directions=directions[chosen])
            found.append((chosen, first, second))
    return found
