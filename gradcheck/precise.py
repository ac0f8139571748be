"""The tolerance of ``precise=True``: derived from error estimates.

The numerical side carries a per-entry error estimate (Richardson) or is
exact to float64 rounding (the mpmath reference). The analytical side is an
AD computation in the input dtype, trusted to half its digits relative to
each entry (``sqrt(eps) / 2``, 7.5e-9 in float64: derivatives of special
functions such as trigamma are accurate to about 1e-10) and to ``AD_ULPS``
units of rounding of the largest entry of its block (for entries that
should be zero). So an entry passes when
``|a - n| <= SAFETY * error(n) + sqrt(eps) / 2 * |n| + AD_ULPS * eps * max |n|``,
and a relative error of 1e-6 is a hundred times above it.
"""
from __future__ import annotations

import numpy as np

from gradcheck import coords
from gradcheck.jacobian import Jacobian

SAFETY = 8.0
AD_ULPS = 4096


def precise_tolerances(numerical: Jacobian, epsilon: float) -> dict:
    """A tolerance matrix (complex form) for each block of ``numerical``."""
    tolerances = {}
    for key in numerical.blocks:
        tolerances[key] = entry_tolerance(numerical.complex_form(*key),
                                          numerical.error_form(*key), epsilon)
        if numerical.unresolved and key in numerical.unresolved:
            # no step was free of a jump: no evidence either way (faults says so)
            unresolved = coords.complex_columns(numerical.unresolved[key].astype(float),
                                                numerical.layout.in_complex[key[1]])
            tolerances[key] = np.where(np.abs(unresolved) > 0, np.inf, tolerances[key])
    return tolerances


def entry_tolerance(values: np.ndarray, error: np.ndarray | None, epsilon: float,
                    scale: float | None = None) -> np.ndarray:
    """The tolerance of each entry of ``values`` (numerical, complex form) with
    its error estimate; ``scale``: the largest finite entry of the whole block
    (by default of ``values``)."""
    values = np.abs(values)
    error = np.zeros_like(values) if error is None else error
    if scale is None:
        scale = np.max(values, initial=0.0, where=np.isfinite(values))  # NaN is no scale
    relative = np.sqrt(epsilon) / 2
    return SAFETY * error + relative * values + AD_ULPS * epsilon * scale + 1e-300
