"""Cells that resolved little or nothing at inputs far above a unit.

A precise check's tolerance is its numerical side's error estimate (``SAFETY``
times it, plus the formula's rounding), and its resolution the smallest
relative error it can see (``numerics.precision.resolution``). The dense and
chunked plans difference each coordinate of 1024 and more on a unit's steps
too (``numerics.largesteps``); compressed and probed plans cannot (a seed
column moves its coordinates by amounts their spacing does not hold exactly)
and difference them with steps of a fraction of their magnitude, across
whatever structure the function has on a unit's scale. ``sin`` at 1e9: a
probed check of 300 entries resolved only errors above 1.5e-3 relative and
passed a backward 1e-4 off; a compressed one (300 or 3,000 entries)
resolved errors above 2e-6 only and passed one 1e-6 off, where whole
Jacobians resolve 7.5e-9.

``whole_needed`` tells such a pass; ``api`` then judges the check again on
whole Jacobians, up to ``WHOLE_COORDINATES`` input coordinates. Beyond, or
where they cannot be built, a pass that resolved nothing is refused (it
could not have failed, as ``lowprec.indtype.refuse_unresolved`` holds for
differences in a narrow dtype), and one that resolved little says so in
``Report.settled``.

Whole Jacobians themselves resolve little where the outputs' rounding
meets the steps: ``x + sin(x)`` at 1e13, whose output's spacing (2e-3)
over steps of 1/32 leaves the derivative's ``cos`` term known to a few
tenths; ``atan`` at 1e12, whose derivative, 1e-24, moves an output of
about 1.57 by less than its rounding over any step its ladder takes.
``poorly_resolved`` tells such a pass of a dense plan, refused or said as
above.
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.core.coords import largest_finite
from adcheck.gradcheck.numerics.largesteps import CEILING
from adcheck.gradcheck.numerics.precision import resolution

#: the plans whose cells are directional differences
CELL_PLANS = ("compressed", "probed")
#: a resolution above this is poor for a precise check of double precision
#: (whole Jacobians resolve 1e-8 and better where a unit's steps are needed)
POOR = 1e-6
#: the most real input coordinates judged again whole: their time grows with the
#: square (``sin`` at 1e9: 3,000 coordinates 39 s, where the cells took 0.3 s)
WHOLE_COORDINATES = 4096


def cell_reach(problem, compared: dict, built: dict) -> tuple:
    """``(largest finite input coordinate, resolution)`` of a precise check's
    cells: ``compared`` holds by AD mode the expected cells and their
    tolerances, by key, ``built`` the formula's cells by AD mode. The
    resolution is ``None`` where no cell was judged, ``0.0`` where none needed
    to be (the formula's cells all zero, and none of the expected ones above
    its tolerance: a function that does not depend on its inputs)."""
    largest = max((largest_finite(np.abs(problem.arrays[i])) for i in problem.diff_in),
                  default=0.0)
    found = [resolution(tols[key], expected.complex_form(*key))
             for expected, tols in compared.values() if tols for key in tols]
    found = [r for r in found if r is not None]
    if not found and not any(np.any(block) for jac in built.values()
                             for block in jac.blocks.values()):
        return largest, 0.0
    return largest, (min(found) if found else None)


def whole_needed(report) -> str | None:
    """Why a passed compressed or probed check is judged again on whole
    Jacobians (see the module docstring), or ``None``."""
    found = _poor(report, CELL_PLANS)
    return None if found is None else (
        f"the {report.plan} cells, at inputs up to {found[0]:.1e}, resolved {found[1]}: a "
        "seed column cannot move such entries by a unit's steps exactly")


def poorly_resolved(report) -> str | None:
    """What a passed precise check on whole Jacobians (a dense plan) resolved,
    in words, where that is little or nothing at inputs far above a unit (see
    the module docstring), or ``None``."""
    found = _poor(report, ("dense",))
    return None if found is None else (
        f"at inputs up to {found[0]:.1e}, whole Jacobians resolved {found[1]}: the outputs' "
        "rounding leaves differences there no finer")


def _poor(report, plans: tuple) -> tuple | None:
    """``(largest input, what was resolved in words)`` of a passed check of one
    of ``plans`` at inputs far above a unit that resolved little or nothing."""
    reach = report.cell_reach
    if not report.passed or report.plan not in plans or reach is None:
        return None
    largest, found = reach
    if not largest >= CEILING or (found is not None and found <= POOR):
        return None
    return largest, "no error" if found is None else f"only errors above {found:.1e} relative"
