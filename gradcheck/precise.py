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

A formula in a narrower dtype (float32, bfloat16, float16) is given the
``allowance`` its low-precision producer attached instead of the last two
terms (see ``gradcheck.lowprecision``).
"""
from __future__ import annotations

import numpy as np

from gradcheck import coords
from gradcheck.jacobian import Jacobian
from gradcheck.precision import resolution

SAFETY = 8.0
AD_ULPS = 4096


def precise_tolerances(numerical: Jacobian, epsilon: float) -> dict:
    """A tolerance matrix (complex form) for each block of ``numerical``."""
    tolerances = {}
    for key in numerical.blocks:
        values = np.abs(numerical.complex_form(*key))
        error = numerical.error_form(*key)
        if error is None:
            error = np.zeros_like(values)
        scale = np.max(values, initial=0.0, where=np.isfinite(values))  # NaN is no scale
        rounding = numerical.allowance_form(*key)
        if rounding is None:
            rounding = np.sqrt(epsilon) / 2 * values + AD_ULPS * epsilon * scale
        tolerances[key] = SAFETY * error + rounding + 1e-300
        if numerical.unresolved and key in numerical.unresolved:
            # no step was free of a jump: no evidence either way (faults says so)
            unresolved = coords.complex_columns(numerical.unresolved[key].astype(float),
                                                numerical.layout.in_complex[key[1]])
            tolerances[key] = np.where(np.abs(unresolved) > 0, np.inf, tolerances[key])
    return tolerances


def annotate(results: list, numerical: Jacobian, tolerances: dict) -> list:
    """Give each result the ``Precision`` of its comparison (when ``numerical``
    states one), with the resolution of its pair's tolerances."""
    if numerical.precision is None:
        return results
    for result in results:
        key = (result.out_idx, result.in_idx)
        if key in tolerances:
            result.precision = numerical.precision.with_resolution(
                resolution(tolerances[key], numerical.complex_form(*key)))
    return results
