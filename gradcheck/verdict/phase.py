"""An output defined up to the phase of each vector, differentiated for another phase.

The eigenvectors of ``torch.linalg.eig`` (and of ``eigh``, ``svd``'s singular
vectors, in complex) are unique only up to a factor ``e^{i theta}`` each:
LAPACK picks one (a real largest component, say), and torch's formulas
differentiate another choice (each vector's change orthogonal to it). So the
vectors' finite differences and the formula's derivatives differ by a change
of phase, ``i theta_k v_k`` for each vector ``v_k``, with a real ``theta_k``
per input direction; a loss that does not depend on the phases (``abs(v)``,
``v v^H``, ``U @ Vh``) gets the same derivative either way. Checked as they
are, such outputs fail with entries that look like "a reduction over the
wrong axis".

``name`` says so where the whole difference between the expected and the
AD Jacobian of a complex output is such a change of phase of its columns
(or of its rows: ``Vh``), to ``GROSS`` of the expected block's largest entry.
The Jacobians alone cannot tell this from a formula that misses the phase
part of a unique output's derivative (columns normalised to unit length,
whose derivative has one): the diagnosis names both.
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.verdict.lostrepeats import GROSS


def phase_only(expected, actual, value: np.ndarray) -> str | None:
    """``"column"`` or ``"row"``: the vectors of the complex output ``value``
    (``(..., m, n)``) whose changes of phase make the whole difference between
    ``expected`` and ``actual`` (real Jacobian blocks of that output, rows its
    real coordinates); ``None`` where they do not, or nothing differs."""
    if expected is None or actual is None or expected.shape != actual.shape or \
            value.ndim < 2 or value.dtype.kind != "c" or \
            expected.shape[0] != 2 * value.size or \
            not (np.all(np.isfinite(expected)) and np.all(np.isfinite(actual))):
        return None
    small = GROSS * float(np.max(np.abs(expected), initial=0.0))
    diff = expected - actual
    if not small > 0 or np.max(np.abs(diff)) <= small:
        return None
    # (each input direction's difference, as the output's complex entries)
    moved = (diff[0::2] + 1j * diff[1::2]).reshape(value.shape + (diff.shape[1],))
    for kind, vectors, changes in (("column", value, moved),
                                   ("row", value.swapaxes(-1, -2), moved.swapaxes(-2, -3))):
        v = vectors[..., None]                         # (..., m, n, 1): v_k in column k
        norms = np.sum(np.abs(v) ** 2, axis=-3, keepdims=True)
        if not np.all(norms > 0):
            continue
        along = np.sum(np.conj(v) * changes, axis=-3, keepdims=True) / norms
        rest = changes - 1j * along.imag * v
        if np.max(np.abs(rest)) <= small and \
                np.max(np.abs(along.real) * np.sqrt(norms)) <= small:
            return kind
    return None


def name(report, problem) -> None:
    """Say the cause in the diagnosis of each first-order failure of ``report``
    whose error is a change of phase of its output's vectors (``phase_only``)."""
    if problem.order != 1:
        return
    expected = report.jacobians.get("numerical")
    for result in report.failures:
        built = report.jacobians.get(result.mode)
        if result.check not in ("reverse", "forward") or result.origin is not None or \
                expected is None or built is None:
            continue
        key = (result.out_idx, result.in_idx)
        value = problem.out_arrays.get(result.out_idx)
        if value is None or key not in expected.blocks or key not in built.blocks:
            continue
        if not np.any(built.blocks[key]):   # (all of it a phase, trivially: zero says more)
            continue
        kind = phase_only(expected.blocks[key], built.blocks[key], value)
        if kind is None:
            continue
        verb = "vjp" if result.mode == "reverse" else "jvp"
        result.diagnosis = (
            f"the {verb} differs from numerical only by a change of phase of each {kind} of "
            f"output {result.out_idx} (v e^(i theta)): either that output is defined up to "
            "such phases (eigenvectors, singular vectors) and the formula differentiates "
            "another choice of them than the function makes, so that only what does not "
            "depend on the phases has one derivative: check a function of it that does not "
            "(abs(v), v v^H, U @ Vh), as PyTorch's tests of eig, eigh and svd do; or the "
            f"{verb} misses the part of the derivative that turns each {kind}'s phase")
