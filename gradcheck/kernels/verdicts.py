"""A kernel's values and Jacobians against its reference's: ``Result``s and words.

Each comparison is the one comparator's (``gradcheck.verdict.compare``), with
the allowance of ``gradcheck.kernels.rounding`` as its tolerance and a
``Precision`` that states its resolution; a failing Jacobian block gets the
diagnosis every check gets (``gradcheck.verdict.diagnosis``). Repeated runs
that differ beyond rounding are reported as nondeterminism (``spread``), not
as a wrong formula. ``summary`` words a report for people: every pair with its
largest error, its allowance and what it could have seen.
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.kernels.rounding import resolution
from adcheck.gradcheck.numerics.precision import Precision
from adcheck.gradcheck.verdict.compare import Result, compare
from adcheck.gradcheck.verdict.diagnosis import diagnose

#: what a kernel is compared against, in results and messages (never "reference",
#: the label of an mpmath reference: ``check(reference=...)``)
AGAINST = "the float64 reference"
METHOD = "the reference run in float64, its derivatives checked first"
NOTE = "resolution relative to each block's largest entry"


def precision(dtype: str, tolerance: np.ndarray, expected: np.ndarray) -> Precision:
    """The ``Precision`` of one comparison of a ``dtype`` kernel."""
    return Precision(dtype, "float64", METHOD, resolution(tolerance, expected), NOTE)


def value_result(o: int, expected, actual, tolerance, dtype: str) -> Result:
    """Output ``o``'s values (flat) against the reference's float64 ones."""
    result = compare("value", "kernel", AGAINST, o, None, expected, actual, tolerance)
    result.precision = precision(dtype, tolerance, expected)
    if not result.passed:
        result.diagnosis = (f"the kernel's output {o} is off by {result.max_error:.1e} at "
                            f"{result.where[0]}, beyond the {tolerance[result.where[0]]:.1e} "
                            f"that {dtype} rounding allows: its forward computes another "
                            "function")
    return result


def block_result(mode: str, key: tuple, expected, actual, tolerance, dtype: str,
                 kinks=None) -> Result:
    """One Jacobian block of the kernel (``mode``: reverse or forward); ``kinks``:
    the part of ``tolerance`` that is the reference's one-sided brackets at its
    kinks (``kernels.kinks``), left out of the resolution stated."""
    o, i = key
    result = compare(mode, mode, AGAINST, o, i, expected, actual, tolerance)
    result.precision = precision(dtype, tolerance if kinks is None else tolerance - kinks,
                                 expected)
    if not result.passed:
        words = diagnose(expected, actual, tolerance, mode, False, False)
        # the diagnosis names the sides of a gradient check; here they are these two
        result.diagnosis = words and words.replace("analytical", "the kernel").replace(
            "numerical", AGAINST)
    return result


def spread(runs: list, tolerance: dict, label: str) -> tuple:
    """``(median, results, gaps)`` of repeated runs of one thing (blocks by
    key): the entrywise median, a failing "nondeterministic" ``Result`` for each
    key whose runs differ beyond its rounding ``tolerance``, and each key's
    spread, by which the allowances widen."""
    median, results, gaps = {}, [], {}
    for key in runs[0]:
        stacked = np.stack([r[key] for r in runs])
        median[key] = np.median(stacked, axis=0)
        # (the same inf in every run is no spread: inf - inf would say NaN, and warn)
        with np.errstate(invalid="ignore"):
            apart = np.where(stacked == median[key], 0.0, np.abs(stacked - median[key]))
        gap = gaps[key] = np.max(apart, axis=0)
        if np.all(gap <= tolerance[key]):
            continue
        out_idx, in_idx = key if isinstance(key, tuple) else (key, None)
        bad = compare("nondeterministic", label, label, out_idx, in_idx, median[key],
                      stacked[int(np.argmax(np.max(apart, axis=tuple(range(1, stacked.ndim)))))],
                      tolerance[key])
        bad.diagnosis = (f"{len(runs)} runs of the kernel at the same inputs differ by up to "
                         f"{bad.max_error:.1e}, beyond rounding ({bad.tolerance:.1e} there): "
                         "nondeterminism (atomic adds, a race), not a wrong formula; the "
                         "median run is judged")
        results.append(bad)
    return median, results, gaps


#: the kernel check's comparisons by name (``name_of``), in words
WORDS = {"value": "forward value", "reverse": "vjp (reverse mode)",
         "forward": "jvp (forward mode)",
         "gradgrad": "second order, reverse over reverse (the vjp's vjp)",
         "fwgrad_bwgrad": "second order, forward over reverse (the vjp's jvp)"}
#: the names of the comparisons, in the order a kernel check makes them
CHECKS = tuple(WORDS)


def name_of(result: Result) -> str:
    """The comparison a result belongs to: ``value``, ``reverse``, ``forward``,
    ``gradgrad`` or ``fwgrad_bwgrad`` (second order: ``gradcheck.core.modes``'
    names), or ``nondeterministic``."""
    if result.order == 2 and result.check in ("reverse", "forward"):
        return "gradgrad" if result.check == "reverse" else "fwgrad_bwgrad"
    return result.check


def one_line(exc) -> str:
    """An exception's message on one line, cut at 300 characters."""
    return " ".join(str(exc).split())[:300]


def _pair(result: Result) -> str:
    parts = [f"the gradient of input {result.out_idx}" if result.order == 2
             else f"output {result.out_idx}"]
    if result.in_idx is not None:
        parts.append(f"input {result.in_idx}" + (f" ({result.in_name})" if result.in_name
                                                   else ""))
    return ", ".join(parts)


def line(result: Result) -> str:
    """One result in words, with what it could have seen."""
    what = WORDS.get(name_of(result), result.check)
    verdict = "ok  " if result.passed else "FAIL"
    text = f"{verdict} {what}, {_pair(result)}: max error {result.max_error:.1e}"
    if result.tolerance is not None:
        text += f", allowed {result.tolerance:.1e} there"
    p = result.precision
    if p is not None and p.resolution is not None:
        text += (f"; errors above {p.resolution:.1e} of the largest entry detectable, "
                 "smaller ones not detectable at this precision")
    if not result.passed and result.diagnosis:
        text += f"\n       {result.diagnosis}"
    if result.detail:
        text += f"\n       {result.detail}"
    return text


def selected(report, checks=None) -> list:
    """The results of ``report`` of the comparisons named in ``checks`` (all
    for ``None``), and every nondeterminism found: runs that differ make
    every comparison of the kernel doubtful."""
    return [r for r in report.results
            if checks is None or name_of(r) in checks or r.check == "nondeterministic"]


def summary(report, checks=None, failures_only: bool = False) -> str:
    """The report of a kernel check in words: the verdict, the notes, then
    every comparison (``line``); with ``checks`` (names of ``CHECKS``), the
    verdict and the lines of those comparisons only; ``failures_only``: the
    verdict and the failing comparisons' lines (the command line's ``-q``)."""
    results = selected(report, checks)
    failures = [r for r in results if not r.passed]
    head = f"{report.name}: " + ("passed" if not failures else
                                 f"{len(failures)} failing comparison(s)")
    dtype = next((r.precision.formula for r in report.results if r.precision), None)
    if dtype and report.settings.get("complex"):
        head += f" (a complex kernel's {dtype} real and imaginary parts against {AGAINST})"
    elif dtype:
        head += f" ({dtype} kernel against {AGAINST})"
    lines = [head]
    if failures_only:
        return "\n".join(lines + ["  " + line(r) for r in failures])
    lines += [f"  note: {note}" for note in report.coverage.get("kernel", [])]
    lines += ["  " + line(r) for r in results]
    return "\n".join(lines)
