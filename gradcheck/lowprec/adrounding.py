"""The rounding of a second-order formula, measured (term 6 of ``gradcheck.lowprec.lowprecision``).

A second-order check's function is itself a backward formula, and its
Jacobian is computed by differentiating that formula: a chain about three
times as long as the first derivative's, whose cancellations the
observables of terms 1 to 5 do not show. The Hessian of ``std`` over two
elements is zero, yet it is computed as a difference of terms ten times
the size of the first derivative, and float32 leaves 40 units of roundoff
of them behind.

So for ``order=2`` that rounding is measured: at ``POINTS`` points next to the
inputs (more for a small problem: ``point_count``; each input coordinate
moved by a relative ``NUDGE`` with a random sign, then rounded to its
dtype) the reverse-mode Jacobian in the
formula's dtype is compared with the reverse-mode Jacobian of the float64
run at the same values. Their difference is the formula's rounding plus any
error the low-precision formula makes and the float64 one does not; the
latter barely changes between points that close, so the *spread* of the
differences (each one's distance to their median) measures the rounding
alone, and a formula that is wrong only in its dtype stays caught.
"""
from __future__ import annotations

import warnings

import numpy as np

from adcheck.gradcheck.core.analytical import ad_blocks
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.problem import Problem
from adcheck.gradcheck.core.sides import REVERSE

#: the points measured, and how far they are (relative; at least 4 units of the dtype)
POINTS = 4
NUDGE = 2.0 ** -12
#: a rounding that shows at one nearby point in five escapes 4 points 39% of the
#: time (torch's masked.cumprod forward over reverse in float16: 1.5 roundings of
#: two cancelling terms at the sample, exactly 0 at 79% of the points around it);
#: a problem of few coordinates, whose points are cheap, measures up to
#: ``MAX_POINTS``, about ``COORDINATES`` input coordinates' worth in all
MAX_POINTS = 32
COORDINATES = 256


def point_count(problem: Problem) -> int:
    """How many nearby points measure ``problem``'s rounding: ``POINTS``, and
    more for a problem with fewer than ``COORDINATES / POINTS`` real input
    coordinates (up to ``MAX_POINTS``)."""
    n = sum(problem.arrays[i].size * (2 if np.iscomplexobj(problem.arrays[i]) else 1)
            for i in problem.diff_in)
    return int(np.clip(COORDINATES // max(n, 1), POINTS, MAX_POINTS))


def nudged(problem: Problem, rng, epsilon: float) -> tuple:
    """The inputs with every coordinate of those that require grad moved by a
    relative ``NUDGE`` (or 4 epsilon) of random sign, rounded to their dtype."""
    step = max(NUDGE, 4 * epsilon)
    inputs = list(problem.inputs)
    for i in problem.diff_in:
        array = problem.arrays[i]
        signs = rng.choice([-1.0, 1.0], size=array.shape)
        moved = array.astype(np.complex128 if np.iscomplexobj(array) else np.float64)
        inputs[i] = problem.like_input(i, moved * (1 + step * signs), requires_grad=True)
    return tuple(inputs)


def measured_rounding(problem: Problem, epsilon: float, widened) -> dict:
    """Per block (real form), the spread of the low-precision reverse-mode
    Jacobian's distance to the float64 one over ``point_count`` nearby points
    (``widened``: ``gradcheck.lowprec.widening.widened``); empty when a point cannot
    be evaluated in both precisions."""
    points = nearby_points(problem, epsilon, widened)
    if points is None:
        return {}
    differences = []
    for low, wide in points:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                a_low, a_wide = ad_blocks(Evaluator(low), REVERSE), ad_blocks(Evaluator(wide),
                                                                             REVERSE)
        except Exception:  # noqa: BLE001 - no backward here: nothing is measured
            return {}
        problem.counts["function"] += low.counts["function"] + wide.counts["function"]
        differences.append({key: a_low[key] - a_wide[key] for key in a_low.blocks})
    return point_spread(differences)


def nearby_points(problem: Problem, epsilon: float, widened) -> list | None:
    """``[(low, wide)]``: ``problem`` at ``point_count`` nearby points (``nudged``)
    in its dtype and in float64 (``widened``); ``None`` when a point cannot be
    evaluated in both precisions."""
    rng = np.random.default_rng(0)
    points = []
    for _ in range(point_count(problem)):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                low = Problem(problem.source, nudged(problem, rng, epsilon), problem.name,
                              order=problem.order, warn_precision=False)
                wide, _ = widened(low)
        except Exception:  # noqa: BLE001 - no derivative there: nothing is measured
            return None
        if wide is None:
            return None
        points.append((low, wide))
    return points


def point_spread(differences: list) -> dict:
    """Per block, each entry's largest distance to its median over the points
    (``differences``: one dict of blocks per point); NaN counts as infinite."""
    found = {}
    for key in (differences[0] if differences else {}):
        stacked = np.stack([d[key] for d in differences])
        centre = np.median(stacked, axis=0)
        found[key] = np.nan_to_num(np.max(np.abs(stacked - centre), axis=0), nan=np.inf)
    return found
