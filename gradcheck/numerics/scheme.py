"""How a check differences its function, and how it judges what it found.

The plan of a check (``gradcheck.producers.choose``) picks one scheme from
the options, once; every producer of cells (dense windows, compressed,
probed, chunked and streamed plans) asks the scheme instead of being told
``precise`` and ``eps`` at each call:

- ``Central``: central differences at ``eps``, judged as PyTorch judges
  (``atol + rtol * |expected|``);
- ``Extrapolated`` (``precise=True``): Richardson extrapolation with an
  error estimate per entry, judged by ``numerics.precise``'s tolerance.

So the difference between a plain and a precise check is written here and
in the modules each scheme names, not as branches through the call chain.
"""
from __future__ import annotations

import math

import numpy as np

from adcheck.gradcheck.core import budget as budgets
from adcheck.gradcheck.core import coords
from adcheck.gradcheck.core.jacobian import Jacobian
from adcheck.gradcheck.core.numerical import central_columns
from adcheck.gradcheck.core.quiet import quiet, restore
from adcheck.gradcheck.numerics.precise import AD_ULPS, entry_tolerance, precise_tolerances
from adcheck.gradcheck.numerics.quotients import evaluated
from adcheck.gradcheck.numerics.richardson import DEEPEST, step_scale
from adcheck.gradcheck.numerics.secondladder import coordinates_work, directions_work


def torch_tolerance(expected: np.ndarray, atol: float, rtol: float) -> np.ndarray:
    """PyTorch's tolerance of each entry, ``atol + rtol * |expected|`` (complex
    form): the rule of every comparison that is not precise, whatever the plan."""
    token = quiet()   # 0 * inf: NaN, which never passes
    try:
        return atol + rtol * np.abs(expected)
    finally:
        restore(token)


class Central:
    """Central differences at ``eps``; tolerances ``atol + rtol * |n|``."""

    #: whether the cells come with an error estimate per entry
    estimates_error = False
    #: copies of a column's outputs held while differencing it (``core.budget``)
    copies = budgets.COMPARISON_COPIES
    #: evaluations per differenced column (a plan's time estimate)
    calls = 2

    def __init__(self, eps: float, atol: float, rtol: float):
        self.eps, self.atol, self.rtol = eps, atol, rtol

    def direction_scale(self, ev, in_idx: int) -> np.ndarray:
        """What seed weights are multiplied by: 1 (every direction steps ``eps``)."""
        return np.ones(ev.problem.layout.in_size(in_idx))

    def cells(self, ev, in_idx: int, directions, columns: np.ndarray, out=None) -> dict:
        """``(cells, None, None)`` by output, a row per column: differences
        along ``directions`` (or the coordinates ``columns`` when ``None``)."""
        found = central_columns(ev, in_idx, self.eps, columns, directions)
        return {o: (block.T, None, None) for o, block in found.items()}

    def tolerances(self, numerical: Jacobian, epsilon: float) -> dict | None:
        """Per-block tolerance matrices, or ``None``: the comparator's own
        ``atol``/``rtol``."""
        return None

    def entry_tolerance(self, values, errors, epsilon: float, scale: float | None = None,
                        absolute: bool = True) -> np.ndarray:
        """The tolerance of each entry of ``values`` (complex form);
        ``absolute=False`` leaves out ``atol`` (added once to a projection)."""
        return torch_tolerance(values, self.atol if absolute else 0.0, self.rtol)

    def floor(self, epsilon: float) -> float:
        """A block's tolerance floor per unit of its largest entry."""
        return 0.0

    @property
    def absolute(self) -> float:
        """The absolute part of a cell's tolerance."""
        return self.atol

    def relative(self, epsilon: float) -> float:
        """``c``, the part of a cell's tolerance proportional to the cell."""
        return self.rtol


class Extrapolated:
    """Richardson extrapolation with an error estimate per entry; tolerances
    from ``numerics.precise`` (``precise=True``)."""

    estimates_error = True
    copies = budgets.EXTRAPOLATION_COPIES
    #: 10 for most smooth columns, 4 to 28 in all
    calls = 10

    def direction_scale(self, ev, in_idx: int) -> np.ndarray:
        """``h_0`` per coordinate, so that a step ``2**-k`` along a seed column
        moves each coordinate as the dense extrapolation does."""
        return step_scale(coords.to_real(ev.problem.arrays[in_idx]))

    def cells(self, ev, in_idx: int, directions, columns: np.ndarray, out=None) -> dict:
        """``(cells, errors, unresolved)`` by output, a row per column (into
        ``out`` when given: see ``richardson.extrapolated_columns``); a cell no step
        resolves, its steps straddling a jump, comes back NaN with an infinite
        error: no evidence either way, as in the dense precise check."""
        if directions is None:
            x = coords.to_real(ev.problem.arrays[in_idx])[columns]
            found, unresolved = evaluated(ev, coordinates_work(ev, in_idx, x, columns, out))
        else:
            found, unresolved = evaluated(ev, directions_work(ev, in_idx,
                                                              direction_steps(len(columns)),
                                                              directions, out))
        return {o: (best, err, unresolved[o]) for o, (best, err) in found.items()}

    def tolerances(self, numerical: Jacobian, epsilon: float) -> dict:
        return precise_tolerances(numerical, epsilon)

    def entry_tolerance(self, values, errors, epsilon: float, scale: float | None = None,
                        absolute: bool = True) -> np.ndarray:
        """``precise.entry_tolerance`` (which has no absolute part)."""
        return entry_tolerance(values, errors, epsilon, scale=scale)

    def floor(self, epsilon: float) -> float:
        """``AD_ULPS`` units of rounding: the part of ``entry_tolerance`` that
        depends on a block's largest entry."""
        return AD_ULPS * epsilon

    absolute = 0.0

    def relative(self, epsilon: float) -> float:
        return math.sqrt(epsilon) / 2


def direction_steps(count: int) -> np.ndarray:
    """Steps ``2**-k`` by level (``DEEPEST`` rows) for ``count`` seed columns,
    whose directions carry each coordinate's ``h_0`` (``direction_scale``)."""
    return np.array(np.broadcast_to(2.0 ** -np.arange(DEEPEST)[:, None], (DEEPEST, count)))


def scheme(options) -> Central | Extrapolated:
    """The scheme ``options`` ask for (``precise``, ``eps``, ``atol``, ``rtol``)."""
    return Extrapolated() if options.precise else \
        Central(options.eps, options.atol, options.rtol)
