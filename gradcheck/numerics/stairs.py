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
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.numerics.noisefloor import CAP_ULPS, largest_input

#: the most rounding, as a share of what the function moves over the widest
#: step (``|D| h_0``), that counts as stairs under a resolved slope: more,
#: and the quotients are noise at every step (corrcoef's first derivative,
#: rounding in exact arithmetic), which no finite difference can judge
RESOLVED = 1e-3
#: the wide levels whose quotients must settle (each move at most half the one
#: before, as a smooth function's do by about 4) before a flat one counts
WIDE_LEVELS = 4


def stair_noise(ev, diffs: list, noises: list, steps: np.ndarray) -> list:
    """``noises`` (by level, by output) raised where the deeper levels'
    quotients stray from the slope the wide levels settled on, by rounding
    (see the module docstring); ``steps``: each level's step by column
    (levels, columns)."""
    if len(diffs) <= WIDE_LEVELS:
        return noises
    p = ev.problem
    raised = [dict(level) for level in noises]
    scale = max(1.0, largest_input(ev))
    for o in diffs[0]:
        d = np.stack([level[o] for level in diffs])             # (levels, columns, outputs)
        height = _stair_height(d, steps[:len(diffs)])
        height[height > CAP_ULPS * p.epsilon(out_idx=o) * scale] = 0.0
        if not height.any():
            continue
        for k, level in enumerate(raised):
            level[o] = np.fmax(level[o], height / steps[k][:, None])
    return raised


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
