"""Rounding stairs that Richardson's own quotients show, raised into their noise.

A function whose rounding comes in stairs wider than the noise floor's moves
(``gradcheck.numerics.noisefloor``) has a measured floor of 0 there, and its
quotients' noise is underestimated by as much: sigmoid's first derivative
``v s (1 - s)`` at ``x`` of 20 to 30 changes only when ``s`` changes by an ulp
of 1, every ``2e-5`` or more in ``x``, while the moves reach ``2e-6``. Its
quotients converge at the wide steps, break where a step crosses a few stairs
(a "jump" to ``_straddling``), and are exactly 0 at the steps inside one
stair, where the deep levels then settle: numerical 0 where the derivative
is ``-2e-12``.

The deep quotients are a measurement, though. Where the wide steps settle
on a slope ``D`` (each move at most half the one before, as a smooth
function's: a jump or a kink within them makes the moves grow instead), a
deeper quotient ``Q`` off ``D`` by more than the truncation left there shows
rounding of at least ``|Q - D| h``: at a step inside one stair ``Q = 0``, and
the function failed to move by ``2 |D| h``. That is rounding, not a
deliberate staircase (``round(x, 3)``, whose quotients also settle on a
slope at wide steps and are 0 at narrow ones), when it is at most
``CAP_ULPS`` ulps of the largest input (or of 1), the bound ``noisefloor``
puts on rounding, and at most ``RESOLVED`` of the function's move over the
widest step (more, and no step resolves the slope: noise, for
``gradcheck.verdict.noise`` to judge). Then each level's noise is raised to
that rounding over its step: the break disappears, the wide steps are kept,
and their error estimates carry the stairs.

Rounding the noise floor measured, but above its cap (ulps of the output's
own size), is raised into the noise the same way (``unit_noise``): an output
of 1e-8 made from intermediates of 1 carries their rounding in absolute
terms, and steps inside one of its stairs settle on a wrong slope.
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.numerics.noisefloor import rounding_bound

#: the most rounding, as a share of what the function moves over the widest
#: step (``|D| h_0``), that counts as stairs under a resolved slope: more,
#: and the quotients are noise at every step (corrcoef's first derivative,
#: rounding in exact arithmetic), which no finite difference can judge
RESOLVED = 1e-3
#: the wide levels whose quotients must settle (each move at most half the one
#: before, as a smooth function's do by about 4) before a flat one counts
WIDE_LEVELS = 4


def stair_noise(ev, diffs: list, noises: list, steps: np.ndarray,
                rounding: dict | None = None) -> list:
    """``noises`` (by level, by output) raised where the deeper levels'
    quotients stray from the slope the wide levels settled on, by rounding
    (see the module docstring), and by the outputs' measured ``rounding``
    (``noisefloor.unit_rounding``; see ``unit_noise``); ``steps``: each
    level's step by column (levels, columns)."""
    if len(diffs) <= WIDE_LEVELS:
        return noises
    raised = [dict(level) for level in noises]
    for o in diffs[0]:
        d = np.stack([level[o] for level in diffs])             # (levels, columns, outputs)
        height = _stair_height(d, steps[:len(diffs)])
        height[height > rounding_bound(ev, o)] = 0.0
        if rounding is not None and o in rounding:
            height = np.fmax(height, unit_noise(d[0], steps[0], rounding[o]))
        if not height.any():
            continue
        for k, level in enumerate(raised):
            level[o] = np.fmax(level[o], height / steps[k][:, None])
    return raised


def unit_noise(widest: np.ndarray, steps: np.ndarray, rounding: np.ndarray) -> np.ndarray:
    """Per (column, output coordinate): the measured ``rounding`` of each
    output coordinate (beyond the floor's cap: ``noisefloor.unit_rounding``)
    where some column's widest step moves it ``1 / RESOLVED`` times that or
    more (``widest``: those quotients, a row per column; ``steps``: their
    steps), else 0.

    A step that moves the output by no more than its rounding resolves no
    slope: inside one stair of ``1 + r``'s rounding, geoopt's ``logmap0`` at
    ``1e-8`` is ``y artanh(r0) / r`` with ``artanh(r0)`` frozen, whose
    quotients settle on ``1 - y**2 / r**2`` (0.51 where the slope is 1)
    below the wide steps' rounding, which their noise, capped at ulps of the
    output's own size, did not carry: each step the rounding moved looked like
    a jump, and the steady wrong slope under them like its resolution. The
    measured rounding over each step is its quotients' noise then: the
    narrow steps' estimates carry it and the wide ones are chosen."""
    with np.errstate(invalid="ignore"):
        moved = np.abs(widest) * steps[:, None]
    moved = np.max(np.where(np.isfinite(moved), moved, 0.0), axis=0, initial=0.0)
    resolved = rounding <= RESOLVED * moved
    return np.broadcast_to(np.where(resolved, rounding, 0.0), widest.shape)


def _stair_height(d: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """Per (column, output): the rounding the deeper levels' quotients show
    where the ``WIDE_LEVELS`` widest settled on a slope ``D`` (0 elsewhere):
    the largest ``(|Q_k - D| - t_k) h_k`` over the deeper levels ``k``, ``t_k``
    twice the truncation error a smooth function's quotient still has there
    (its ``h^2`` term, a quarter per level, from the widest levels' own)."""
    wide = d[:WIDE_LEVELS]
    with np.errstate(invalid="ignore", over="ignore"):
        moves = np.abs(np.diff(wide, axis=0))
        settled = np.all(moves[1:] <= moves[:-1] / 2, axis=0)
        slope = wide
        for j in range(1, WIDE_LEVELS):   # Richardson's tableau of the wide levels
            slope = (4.0 ** j * slope[1:] - slope[:-1]) / (4.0 ** j - 1)
        slope = slope[0]
        settled &= np.isfinite(slope) & (slope != 0)
        if not settled.any():
            return np.zeros(d.shape[1:])
        truncation = np.abs(wide[-1] - slope)
        height = np.zeros(d.shape[1:])
        for k in range(WIDE_LEVELS, len(d)):
            shrink = 2.0 * 4.0 ** -(k - WIDE_LEVELS + 1)
            excess = np.abs(d[k] - slope) - shrink * truncation
            np.fmax(height, excess * steps[k][:, None], out=height)
    settled &= height <= RESOLVED * np.abs(slope) * steps[0][:, None]
    return np.where(settled, height, 0.0)
