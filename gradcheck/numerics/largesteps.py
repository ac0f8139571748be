"""Steps on a unit scale, where a coordinate is far above it.

Richardson's ladder starts at a 32nd of the coordinate (``richardson.step_scale``)
and rarely goes below ``2**-18`` of it: a function that varies on the scale
of its input (``log``, ``x**2``, ``tanh(x / 1e6)``) is differenced where its
Taylor terms settle. One whose structure has a fixed width wherever the
input lies is not: ``sin`` or ``cos`` of an angle of 1e6 (a positional
encoding's position, a timestamp's Fourier features), ``tanh`` or
``sigmoid`` of ``x - c`` near a large ``c``. Their smallest regular step at
1e6 is 4, wider than half a period of ``sin``: the quotients average the
oscillation towards a small value with a small spread, taken for a
converged derivative. Torch's correct formulas failed there ("only 1 of 3
nonzero entries differ", or "numerical is zero"), at 1e5 to 1e7 for a
third to all of the draws, and at 1e15 every time.

So each real coordinate with ``|x| >= CEILING`` (and every other one of an
input that holds such a coordinate, but the small ones: ``unit_coordinates``)
gets a second ladder of ``LEVELS`` steps, the first ``UNIT`` (a unit
coordinate's first step) or, where the input's spacing is too coarse for
``LEVELS`` halvings from there,
``2**(LEVELS - 1)`` spacings: every step is then a power of two no smaller
than the spacing, so ``x +- h`` is exact and the quotient's width is the
step (at 1e15, whose spacing is 0.125, the steps are 16 down to 0.125).
The levels before a break are discarded as in the first ladder
(``richardson._straddling``), and the entries judged as the small
coordinates' second ladder's are (``secondladder``): taken where credible
and where the first ladder has none, disagrees or estimates less
precisely.

The quotients' noise is measured with moves of a few to some hundred ulps
(``noisefloor.near_floor``), in place of the first ladder's floor, whose
wide moves are fractions of the coordinate (up to ``2**-24`` of it, 8 at
1e8), across the very structure this ladder is for: their slopes differ by
its curvature, not by rounding (``x + sin(x)`` at 1e8 got a floor of 0.14,
ten million ulps of the output, and every entry of this ladder an estimate
above itself). The near moves still see rounding that happens inside:
``sin(2 pi x / 86400)`` at 2e12 rounds ``2 pi x`` to stairs 8 ulps of
``x`` wide, whose slope over this ladder's power-of-two steps aliases to a
wrong value 3e-3 off, the same at every step, with an estimate of 6e-13
(``sinc``'s ``sin(pi x)`` at 1e9 likewise).
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.coords import spacing
from adcheck.gradcheck.numerics.noisefloor import LARGE, near_floor
from adcheck.gradcheck.numerics.quotients import differences_of
from adcheck.gradcheck.numerics.richardson import _extrapolated, _steady

CEILING = LARGE       # from here the first ladder's regular steps stay above 2**-8
UNIT = 2.0 ** -5      # the first step of a coordinate of magnitude 1 (richardson.step_scale)
LEVELS = 8            # steps of the second ladder, each half the one before


def large_coordinates(x: np.ndarray) -> np.ndarray:
    """Indices of the real coordinates ``x`` that are finite and at least ``CEILING``."""
    size = np.abs(x)
    return np.flatnonzero(np.isfinite(size) & (size >= CEILING))


def unit_coordinates(x: np.ndarray, holds: bool, floor: float) -> np.ndarray:
    """Indices of the real coordinates ``x`` this ladder takes: those of at least
    ``CEILING``; and where their input ``holds`` one (``noisefloor.holds_large``), every
    other finite one of ``floor`` or more, or zero (the small ones have a ladder of
    their own). The first ladder's noise floor moves the whole input by fractions
    of each entry, 64 at 1e9, across the large entries' structure: its slopes then
    differ by far more than rounding, and every column of that input, the small
    imaginary parts beside real parts of 1e9 too, got estimates of 1e-6 to 1e-5,
    within which a backward 1e-5 off passed."""
    size = np.abs(x)
    finite = np.isfinite(size)
    if not holds:
        return np.flatnonzero(finite & (size >= CEILING))
    return np.flatnonzero(finite & ((size >= floor) | (size == 0)))


def first_steps(x: np.ndarray, eps: float) -> np.ndarray:
    """The second ladder's first step for each (large) coordinate of ``x``,
    whose dtype's machine epsilon is ``eps``: ``UNIT``, or ``2**(LEVELS - 1)``
    times the coordinate's spacing where that is larger (a power of two)."""
    return np.maximum(UNIT, spacing(x, eps) * 2.0 ** (LEVELS - 1))


def ladder(ev: Evaluator, in_idx: int, first: np.ndarray, columns: np.ndarray):
    """A generator of one evaluation (``quotients.evaluated``; the near
    floor's is made directly, once per check) returning, as
    ``richardson.columns_work`` does, the extrapolated value and error by
    output (a row per coordinate of ``columns``) and where no step was free
    of a jump, from the steps ``first * 2**-k``, ``k < LEVELS``."""
    steps = first[None, :] * 2.0 ** -np.arange(LEVELS)[:, None]
    differences = differences_of(ev, in_idx, steps, None, columns,
                                 floor=near_floor(ev, in_idx))
    diffs, noises = yield from differences(np.arange(LEVELS), np.arange(len(columns)))
    noises, breaks, unresolved = _steady(ev, diffs, noises, steps)
    return _extrapolated(ev.problem, diffs, noises, breaks, ev.budget), unresolved

