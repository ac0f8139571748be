"""The rounding an AD side's values carry, measured rather than assumed.

``precise.entry_tolerance`` trusts an AD value to ``sqrt(eps) / 2`` of its
entry and ``AD_ULPS`` ulps of its block's largest entry. Most formulas are
right to a few ulps; a long chain of normwise-stable factorizations is not:
torch's double backward of ``svd_lowrank`` (three QRs and an SVD) carries
rounding of about 1e7 ulps of the block's largest entry
(bench/probed_tolerance.md). Such rounding shows when the inputs move by a
few ulps: the AD values' second difference ``A(x + s) + A(x - s) - 2 A(x)``
is as large as their rounding, while a formula's own error, smooth in the
inputs, moves by ulps of it (the curvature over so small a move is
negligible). So a block that failed is judged again with ``FACTOR`` times
the largest second difference of its AD values added to each entry's
tolerance. The same rule serves whole Jacobians and their cells (``J S``,
``W^T J S``), whatever the plan.

Where the values do not move, the floor is a few ulps and changes nothing
(far below the ``AD_ULPS`` term). It never exceeds ``CAP`` times
``sqrt(eps)`` of the block's largest expected entry, so an error of 1e-6 of
an entry within ``1 / (FACTOR * CAP) * 1e-6 / sqrt(eps)`` of the block's largest is
always caught.
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.core.coords import largest_finite

#: the measured floor times this covers the rounding: on svd_lowrank's complex128
#: double backward (the seeds whose check failed without it, and others; dense and
#: probed) the largest factor any entry needed was 0.38 (bench/probed_tolerance.py
#: calibrate, bench/probed_tolerance.md), and 4 is ten times that
FACTOR = 4.0
#: no floor above this times sqrt(eps) times the block's largest expected entry:
#: values that move more under moves of a few ulps are at a jump, not rounding
CAP = 1.0


def second_differences(base, moved: list, keys) -> dict:
    """By block ``key`` of ``keys``: the largest ``|A(x + s) + A(x - s) - 2 A(x)|``
    over the pairs ``moved`` of Jacobians at moved inputs (complex form, as
    ``base``), over the block's finite entries; 0.0 where nothing was measured."""
    found = {}
    for key in keys:
        mid = base.complex_form(*key)
        largest = 0.0
        for plus, minus in moved:
            with np.errstate(invalid="ignore", over="ignore"):
                second = np.abs(plus.complex_form(*key) + minus.complex_form(*key) - 2 * mid)
            largest = max(largest, largest_finite(second))
        found[key] = largest
    return found


def floors(second: dict, expected, epsilon: float) -> dict:
    """By block: ``FACTOR`` times its second difference (``second_differences``),
    at most ``CAP`` ``sqrt(eps)`` of the block's largest ``expected`` entry."""
    return {key: FACTOR * min(value, CAP * np.sqrt(epsilon)
                              * largest_finite(np.abs(expected.complex_form(*key))))
            for key, value in second.items()}


def unsteady(second: float, expected, key, epsilon: float) -> str | None:
    """What to say of a failed block whose AD values moved by ``second`` under moves
    of a few ulps, more than ``CAP`` allows a floor for: None below it. Above it the
    values are no sharper than that, so the failure may be the formula's evaluation
    losing digits (torch's householder_product backward at reflectors of norm 30
    moves by 1e-5 of its largest entry) as well as a wrong formula or a jump."""
    largest = largest_finite(np.abs(expected.complex_form(*key)))
    if not largest or second <= CAP * np.sqrt(epsilon) * largest:
        return None
    return (f"the AD values themselves move by up to {second:.1e} ({second / largest:.0e} of "
            f"the block's largest entry) when the inputs move by a few ulps: a jump within "
            f"a few ulps, or a formula whose evaluation loses that many digits here, so "
            f"differences of that size need not be a wrong formula")


def widened(tolerances: dict, floor: dict) -> dict:
    """``tolerances`` with each block's ``floor`` added to every entry."""
    return {key: tol + floor.get(key, 0.0) for key, tol in tolerances.items()}
