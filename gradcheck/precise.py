"""The tolerance of ``precise=True``: derived from error estimates.

The numerical side carries a per-entry error estimate (Richardson) or is
exact to float64 rounding (the mpmath reference). The analytical side is an
AD computation in the input dtype, trusted to ``AD_ULPS`` units of rounding
of each entry and of the largest entry of its block. So an entry passes when
``|a - n| <= SAFETY * error(n) + AD_ULPS * eps * (|n| + max |n|)``.
"""
from __future__ import annotations

import numpy as np

from gradcheck.jacobian import Jacobian

SAFETY = 8.0
AD_ULPS = 4096


def precise_tolerances(numerical: Jacobian, epsilon: float) -> dict:
    """A tolerance matrix (complex form) for each block of ``numerical``."""
    tolerances = {}
    for key in numerical.keys():
        values = np.abs(numerical.complex_form(*key))
        error = numerical.error_form(*key)
        if error is None:
            error = np.zeros_like(values)
        scale = values.max() if values.size else 0.0
        tolerances[key] = SAFETY * error + AD_ULPS * epsilon * (values + scale) + 1e-300
    return tolerances
