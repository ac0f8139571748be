"""A formula right where an input is positive and of the wrong sign where it is negative.

A derivative written for ``x >= 0`` (through ``abs(x)``, ``sgn(x)``, the square
root of a square, or a function's result divided by its modulus, as
``torch.polar``'s backward divides by ``|result|``) is the derivative of the
function of ``|x|``: where ``x < 0`` it has the opposite sign. Checked at
``randn`` inputs, its failure has an exact shape: the formula's column of
each negative input entry is the negative of the expected one, every other
column agrees. ``name`` says so, with both ways out: the function's domain
(torch documents polar's as ``abs >= 0``) or the sign the formula misses.
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.verdict.lostrepeats import GROSS


def flipped_at_negatives(expected, actual, values) -> int:
    """How many columns of ``actual`` are the negatives of ``expected``'s, each
    of an entry of ``values`` (the real input, flattened) below zero, every
    other column agreeing with ``expected``'s; 0 where the error has another
    shape (or the input has no entry of either sign)."""
    if expected is None or actual is None or expected.shape != actual.shape or \
            expected.ndim != 2 or values is None or values.shape != (expected.shape[1],) or \
            not (np.all(np.isfinite(expected)) and np.all(np.isfinite(actual))):
        return 0
    negative = values < 0
    if not negative.any() or negative.all():
        return 0
    small = GROSS * float(np.max(np.abs(expected), initial=0.0))
    if not small > 0 or np.max(np.abs(expected[:, negative]), initial=0.0) <= small:
        return 0
    if np.max(np.abs(actual[:, negative] + expected[:, negative])) > small or \
            np.max(np.abs(actual[:, ~negative] - expected[:, ~negative]), initial=0.0) > small:
        return 0
    return int(negative.sum())


def name(report, problem) -> None:
    """Say the cause in the diagnosis of each first-order failure of ``report``
    whose error has the shape of ``flipped_at_negatives`` on a real input."""
    if problem.order != 1:
        return
    for result in report.failures:
        if result.check not in ("reverse", "forward") or result.origin is not None:
            continue
        array = problem.arrays.get(result.in_idx)
        if array is None or array.dtype.kind != "f":
            continue
        flipped = flipped_at_negatives(result.expected, result.actual,
                                       array.astype(np.float64).ravel())
        if not flipped:
            continue
        verb = "vjp" if result.mode == "reverse" else "jvp"
        result.diagnosis = (
            f"the {verb} has the wrong sign at the {flipped} entries of input "
            f"{result.in_idx} that are negative, and is right at the others: it is the "
            "derivative of a function of |x| (it takes abs() or sgn() of the input, or "
            "divides by a modulus), right only where the input is positive. If negative "
            "inputs are outside the function's domain (torch.polar's abs), check it at "
            "positive ones (rand(3, 4) + 0.1); else the formula misses the input's sign")
