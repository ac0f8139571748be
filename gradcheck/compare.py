"""The one comparator: what was expected against what was found, within a tolerance.

Every check reduces to a ``Result``: which check, which (output, input) pair,
which two things were compared (``mode`` against ``against``), whether they
agree, the largest error, where it is and the tolerance there. ``compare``
is the one comparison that makes one (expected, actual, a tolerance per
entry); each check adds only its diagnosis. ``compare_pair`` applies it to
a pair of Jacobian blocks, with PyTorch's tolerance and ``diagnosis``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gradcheck.diagnosis import diagnose
from gradcheck.jacobian import Jacobian
from gradcheck.serialize import json_array, json_float


@dataclass
class Result:
    """The outcome of one check on one (output, input) pair."""

    check: str
    mode: str
    against: str
    out_idx: int | None
    in_idx: int | None
    passed: bool
    max_error: float = 0.0
    where: tuple | None = None
    tolerance: float | None = None
    expected: np.ndarray | None = None
    actual: np.ndarray | None = None
    diagnosis: str | None = None
    detail: str | None = None
    #: 1, or 2 when the function checked was the first derivative (gradgradcheck)
    order: int = 1
    #: what the comparison could resolve (``gradcheck.precision.Precision``), when
    #: known: set for precise checks of a formula narrower than double precision
    precision: object = None
    #: the input's name (a module's parameter, ``"layer.0.weight"``; a pytree leaf's
    #: path), or ``None`` when the inputs are not named
    in_name: str | None = None

    def to_dict(self) -> dict:
        """JSON-serializable; arrays as nested lists, complex as ``[re, im]``."""
        return {
            "check": self.check, "mode": self.mode, "against": self.against,
            "out_idx": self.out_idx, "in_idx": self.in_idx, "passed": self.passed,
            "max_error": json_float(self.max_error),
            "where": None if self.where is None else [int(k) for k in self.where],
            "tolerance": json_float(self.tolerance),
            "expected": json_array(self.expected), "actual": json_array(self.actual),
            "diagnosis": self.diagnosis, "detail": self.detail, "order": self.order,
            "precision": None if self.precision is None else self.precision.to_dict(),
            "in_name": self.in_name}


def entry_errors(expected: np.ndarray, actual: np.ndarray,
                 same_nonfinite: bool = False) -> np.ndarray:
    """``|actual - expected|`` with any NaN mismatch (or NaN) counted as inf.

    ``same_nonfinite``: entries where both are NaN, or both the same infinity
    (in each part of a complex number), count as equal (error 0): for checks
    that compare a computation with a repeat of itself, where the same NaN
    twice is no difference (the NaN is another check's finding).
    """
    with np.errstate(invalid="ignore"):
        err = np.abs(actual - expected).astype(np.float64)
    if same_nonfinite:
        err[_same_nonfinite(np.asarray(expected), np.asarray(actual))] = 0.0
    err[np.isnan(err)] = np.inf
    return err


def _same_nonfinite(expected: np.ndarray, actual: np.ndarray) -> np.ndarray:
    """Where ``expected`` and ``actual`` hold the same non-finite value."""
    def same(e, a):
        return (np.isnan(e) & np.isnan(a)) | (np.isinf(e) & (e == a)) | (np.isfinite(e) & (e == a))
    e, a = np.broadcast_arrays(expected, actual)
    both = same(e.real, a.real) & same(np.imag(e), np.imag(a))
    return both & ~(np.isfinite(e) & np.isfinite(a))


def worst(err: np.ndarray, tol: np.ndarray) -> tuple:
    """(max error, where) preferring entries that violate ``tol``."""
    if err.size == 0:
        return 0.0, None
    bad = err > tol
    masked = np.where(bad, err, -1.0) if bad.any() else err
    flat = int(np.argmax(masked))
    where = np.unravel_index(flat, err.shape)
    return float(err[where]), tuple(int(k) for k in where)


def compare(check: str, mode: str, against: str, out_idx: int | None, in_idx: int | None,
            expected: np.ndarray, actual: np.ndarray, tol, same_nonfinite: bool = False) -> Result:
    """The one comparison: ``actual`` passes where ``|actual - expected| <= tol``
    entry by entry (``tol`` an array of their shape, or one number; NaN never
    passes, unless ``same_nonfinite`` and both are NaN: see ``entry_errors``).
    The ``Result`` holds the largest error (one that fails first), where it
    is, the tolerance there, and both arrays; no diagnosis."""
    err = entry_errors(expected, actual, same_nonfinite)
    tol = np.broadcast_to(np.asarray(tol, dtype=np.float64), err.shape)
    if same_nonfinite:  # a tolerance computed from a NaN is NaN: the same NaN passes anyway
        tol = np.where(_same_nonfinite(np.asarray(expected), np.asarray(actual)), np.inf, tol)
    passed = bool(np.all(err <= tol))
    max_error, where = worst(err, tol)
    return Result(check, mode, against, out_idx, in_idx, passed, max_error, where,
                  None if where is None else float(tol[where]), expected, actual)


def compare_pair(check: str, expected: Jacobian, actual: Jacobian, out_idx: int, in_idx: int,
                 atol: float, rtol: float, tol: np.ndarray | None = None,
                 explain: bool = True, same_nonfinite: bool = False) -> Result:
    """Compare ``actual[out_idx, in_idx]`` with ``expected[out_idx, in_idx]``.

    The comparison is PyTorch's, in the complex form of the blocks:
    ``|a - e| <= atol + rtol * |e|`` entry by entry, unless a tolerance
    matrix ``tol`` (same shape) is given. A failure gets ``diagnose``'s
    sentence unless ``explain`` is False (the caller gives its own).
    """
    e = expected.complex_form(out_idx, in_idx)
    a = actual.complex_form(out_idx, in_idx)
    if tol is None:
        with np.errstate(invalid="ignore"):  # 0 * inf: NaN, which never passes
            tol = atol + rtol * np.abs(e)
    result = compare(check, actual.mode, expected.mode, out_idx, in_idx, e, a, tol,
                     same_nonfinite)
    if not result.passed and explain:
        layout = actual.layout
        result.diagnosis = diagnose(
            expected[out_idx, in_idx], actual[out_idx, in_idx], tol, actual.mode,
            layout.out_complex[out_idx], layout.in_complex[in_idx])
    return result


def compare_jacobians(check: str, expected: Jacobian, actual: Jacobian, atol: float,
                      rtol: float, tolerances: dict | None = None, explain: bool = True,
                      same_nonfinite: bool = False) -> list:
    """``compare_pair`` for every pair the two Jacobians share."""
    results = []
    for key in sorted(actual.keys()):
        if key in expected:
            tol = None if tolerances is None else tolerances.get(key)
            results.append(compare_pair(check, expected, actual, *key, atol, rtol, tol, explain,
                                        same_nonfinite))
    return results
