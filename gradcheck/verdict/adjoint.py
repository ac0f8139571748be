"""The adjoint identity: forward and reverse mode checked against each other.

For the same probe directions ``u`` and ``v``, ``<v, J_forward u>`` must equal
``<J_reverse^T v, u>`` up to rounding in the two AD computations: no finite
differences, so the tolerance is a few thousand units in the last place of
the sum of absolute products, not ``atol``/``rtol``. It catches an error of
relative size 1e-9 in float64 that only one of the two modes makes.
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.verdict.compare import compare
from adcheck.gradcheck.core.jacobian import Jacobian, projection_layout

#: tolerance in units of the dtype's machine epsilon
ADJOINT_ULPS = 4096


def adjoint_tolerance(probes, jtv: dict, ju: dict, key, epsilon: float,
                      nondet_tol: float = 0.0, magnitude: float = 0.0) -> np.ndarray:
    """Per-probe tolerance ``ULPS * eps * (|v|.|J u| + |J^T v|.|u| + ||J||_F)``
    (the last for results that cancel to almost zero), plus
    ``nondet_tol * (|u|_1 + |v|_1)`` for nondeterminism the caller allows."""
    out_idx, in_idx = key
    v, u = np.abs(probes.v[out_idx]), np.abs(probes.u[in_idx])
    scale = np.sum(v * np.abs(ju[key]), axis=1) + np.sum(np.abs(jtv[key]) * u, axis=1)
    allowed = nondet_tol * (np.sum(u, axis=1) + np.sum(v, axis=1))
    rounding = ADJOINT_ULPS * epsilon * (scale + magnitude)
    return (rounding + allowed + np.finfo(np.float64).tiny)[:, None]


def adjoint_results(probes, reverse: Jacobian, jtv: dict, forward: Jacobian, ju: dict,
                    epsilon: float, nondet_tol: float = 0.0, magnitudes=None) -> list:
    """Compare the reverse and forward projections pair by pair."""
    results = []
    for key in sorted(reverse.blocks):
        if key not in forward:
            continue
        magnitude = (magnitudes or {}).get(key, 0.0)
        tol = adjoint_tolerance(probes, jtv, ju, key, epsilon, nondet_tol, magnitude)
        result = compare("adjoint", forward.mode, reverse.mode, *key, reverse[key], forward[key],
                         tol)
        if not result.passed:
            rel = result.max_error / max(float(np.max(np.abs(result.expected))), 1e-300)
            result.diagnosis = (
                f"the two AD modes differ by a relative {rel:.1e}: the vjp or the jvp is "
                "wrong, by less than finite differences may resolve (precise=True or an "
                "mpmath reference tells which)")
        results.append(result)
    return results


def slow_projections(probes, reverse: Jacobian, forward: Jacobian, layout) -> tuple:
    """Projections of full reverse and forward Jacobians onto the probes."""
    rev = Jacobian("reverse", projection_layout(layout))
    fwd = Jacobian("forward", projection_layout(layout))
    jtv, ju = {}, {}
    for key in reverse.blocks:
        if key not in forward:
            continue
        out_idx, in_idx = key
        jtv[key] = probes.v[out_idx] @ reverse[key]
        ju[key] = probes.u[in_idx] @ forward[key].T
        rev.blocks[key] = np.sum(jtv[key] * probes.u[in_idx], axis=1)[:, None]
        fwd.blocks[key] = np.sum(probes.v[out_idx] * ju[key], axis=1)[:, None]
    return rev, jtv, fwd, ju
