"""Failures that are no evidence against a formula: "cannot judge" verdicts.

A check fails where the sample gives finite differences nothing to work on:
the function is NaN or inf at the sample (``nonfinite-output``), within a
step of it (``nonfinite`` on the numerical side), or jumps there
(``discontinuous``: every step straddles it). Low-precision samples meet this
more often than double precision ones: op_db draws a float16 sample on its
coarse grid, and a point of asin's domain edge, atanh's pole or a step of
ceil is then a value the sample can hold exactly. Where AD returns NaN or inf
and the true derivative there (from the float64 run) exceeds what the dtype
can hold, the formula overflowed, as it must in that dtype. A check whose
every failure is one of these is reported as skipped, saying so; any other
failure keeps it failed.
"""
from __future__ import annotations

import numpy as np

#: failures that say the sample, not the formula, is the problem
NO_EVIDENCE = ("nonfinite-output", "discontinuous")


#: the largest finite value of each dtype, by name (complex: of its parts)
LARGEST = {"float16": 65504.0, "complex32": 65504.0, "bfloat16": 3.3895313892515355e38,
           "float32": 3.4028234663852886e38, "complex64": 3.4028234663852886e38}


def cannot_judge(report, dtype_name: str) -> str | None:
    """Why every failure of ``report`` (a check in the dtype ``dtype_name``) is
    no evidence against the formula, or ``None`` when one of them is."""
    failing = report.failures
    largest = LARGEST.get(dtype_name.split("+")[0])
    if not failing or not all(_no_evidence(report, f, largest) for f in failing):
        return None
    from adcheck.gradcheck.verdict.report import describe
    text = "cannot judge this sample: " + describe(failing[0], report.name).splitlines()[0]
    output_nonfinite = any(f.check == "nonfinite-output" for f in failing)
    if not output_nonfinite and any(f.mode not in ("numerical", "reference", "function")
                                    and f.check not in NO_EVIDENCE for f in failing):
        text += (f" (AD's NaN and inf are where the true derivative is infinite, or beyond "
                 f"{dtype_name}'s largest value {largest:.6g}: an overflow, as it must be)"
                 if largest is not None else " (AD's NaN and inf are where the true "
                 "derivative is infinite)")
    return text


def _no_evidence(report, result, largest) -> bool:
    if result.check in NO_EVIDENCE:
        return True
    infinite = result.check == "nonfinite" or not np.isfinite(result.max_error)
    if infinite and any(f.check == "nonfinite-output"
                        and result.out_idx in (f.out_idx, None) for f in report.failures):
        # NaN or inf derivatives of an output that is itself NaN or inf (a check of
        # every output at once, out_idx None, meets its 0 * NaN as well)
        return True
    if result.check == "nonfinite" and result.mode in ("numerical", "reference"):
        return True
    # AD's NaN or inf, or a comparison that failed on one, where the sample sits
    # on a singularity or the derivative overflows the dtype
    return infinite and _singular(report, result, largest)


def _singular(report, result, largest: float | None) -> bool:
    """Whether the true derivative in the failing block is NaN or inf (the
    sample is at a pole or a domain edge) or exceeds ``largest``, the dtype's
    largest value (an overflow gives inf there, and inf times zero NaN)."""
    numerical = report.jacobians.get("numerical")
    block = None if numerical is None else numerical.blocks.get((result.out_idx,
                                                                  result.in_idx))
    if block is None:
        return False
    finite = np.isfinite(block)
    if not finite.all():
        return True
    return largest is not None and bool(finite.size) and float(np.abs(block).max()) > largest


def overflow_only(report, dtype_name: str) -> bool:
    """Whether ``report`` (a check in the narrow dtype ``dtype_name``) failed
    only on AD's NaN or inf, with the true derivative finite there: the
    formula is wrong, or right and its intermediates overflow the dtype (such
    as ``exp(16.6)`` in float16 in logaddexp's second derivative). The same
    check in double precision tells which (``runner.checks``)."""
    if LARGEST.get(dtype_name.split("+")[0]) is None or not report.failures:
        return False
    return all(_overflowed(report, f) for f in report.failures)


def _overflowed(report, result) -> bool:
    """Whether ``result`` is AD's NaN or inf, or a comparison of a pair whose
    AD Jacobian has some (an overflow to inf also gives 0 where inf divides:
    its finite entries are suspect too), where the true derivative is finite."""
    if result.mode in ("numerical", "reference", "function"):
        return False
    actual = None if result.actual is None else np.asarray(result.actual)
    nonfinite = (result.check == "nonfinite" or not np.isfinite(result.max_error)
                 or (actual is not None and not np.isfinite(actual).all()))
    return nonfinite and not _singular(report, result, None)


def overflow_reason(report, dtype_name: str) -> str:
    """The "cannot judge" text of an ``overflow_only`` report whose check
    passes in double precision at the same values."""
    from adcheck.gradcheck.verdict.report import describe
    largest = LARGEST[dtype_name.split("+")[0]]
    return ("cannot judge this sample: " + describe(report.failures[0], report.name)
            .splitlines()[0] + f" (the same check passes in double precision at the same "
            f"values: the formula is right, and an intermediate of it overflows "
            f"{dtype_name}'s range (largest {largest:.6g}) where the true derivative is finite)")
