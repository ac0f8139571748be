"""The tolerance of ``precise=True``: derived from error estimates.

The numerical side carries a per-entry error estimate (Richardson) or is
exact to float64 rounding (the mpmath reference). The analytical side is an
AD computation in the input dtype, trusted to half its digits relative to
each entry (``sqrt(eps) / 2``, 7.5e-9 in float64: derivatives of special
functions such as trigamma are accurate to about 1e-10) and to ``AD_ULPS``
units of rounding of the largest entry of its block (for entries that
should be zero). So an entry passes when
``|a - n| <= SAFETY * error(n) + sqrt(eps) / 2 * |n| + AD_ULPS * eps * max |n|``,
and a relative error of 1e-6 is a hundred times above it. A block that is
zero throughout (in its numerical values) has no largest entry of its own:
its ``max |n|`` is that of its output's other blocks (``zero_blocks_shared``).

A formula in a narrower dtype (float32, bfloat16, float16) is given the
``allowance`` its low-precision producer attached instead of the last two
terms (see ``gradcheck.lowprec.lowprecision``).
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.core import coords
from adcheck.gradcheck.core.jacobian import Jacobian
from adcheck.gradcheck.numerics.precision import resolution
from adcheck.gradcheck.core.coords import largest_finite

SAFETY = 8.0
AD_ULPS = 4096


def precise_tolerances(numerical: Jacobian, epsilon: float) -> dict:
    """A tolerance matrix (complex form) for each block of ``numerical``."""
    tolerances, scales = {}, ad_scales(numerical)
    for key in numerical.blocks:
        values = numerical.complex_form(*key)
        scale = scales[key] if numerical.compressed(key[1]) else crossing(values, scales[key])
        tolerances[key] = entry_tolerance(values, numerical.error_form(*key), epsilon,
                                          scale=scale, rounding=numerical.allowance_form(*key))
        if numerical.unresolved and key in numerical.unresolved:
            complex_ = numerical.layout.in_complex[key[1]] and not numerical.compressed(key[1])
            unresolved = coords.complex_columns(numerical.unresolved[key].astype(float),
                                                complex_)
            tolerances[key] = no_evidence(tolerances[key], np.abs(unresolved) > 0)
    return tolerances


def ad_scales(numerical: Jacobian) -> dict:
    """By block, the largest entry whose ulps ``entry_tolerance``'s AD term
    counts (``zero_blocks_shared``). A compressed block (cells ``J S``) is in
    cell units: its column ``g`` is at most the block's largest entry times
    ``sum |S[:, g]|``, so that entry is at least its largest cell over that."""
    own = {key: largest_finite(numerical.complex_form(*key)) for key in numerical.blocks}
    if all(own.values()):
        return own
    dense = {key: largest_finite(np.abs(numerical.complex_form(*key)) / _norms(numerical, key[1]))
                  if numerical.compressed(key[1]) else value for key, value in own.items()}
    shared = zero_blocks_shared(dense)
    return {(o, i): value if value > 0 else
            shared[o, i] * numerical.seeds[i].column_norms() if numerical.compressed(i) else
            shared[o, i] for (o, i), value in own.items()}


def crossing(values: np.ndarray, scale: float):
    """By entry of a dense block, the largest finite entry of its row or its
    column (the terms its vjp, a row, or its jvp, a column, is made of), or
    ``scale`` (``ad_scales``'s) where both are zero: the AD term's unit of
    rounding. The block's largest entry alone let entries of 1 err by 10 %
    beside entries of 1e12 elsewhere in the block (normalize of a zero row,
    its slope 1 / eps)."""
    found = np.abs(values)
    found = np.where(np.isfinite(found), found, 0.0)
    if found.ndim != 2 or not found.size:
        return scale
    found = np.maximum(found.max(axis=1, keepdims=True), found.max(axis=0, keepdims=True))
    return np.where(found > 0, found, scale)


def _norms(numerical: Jacobian, in_idx: int) -> np.ndarray:
    norms = numerical.seeds[in_idx].column_norms()
    return np.where(norms > 0, norms, np.inf)


def zero_blocks_shared(largest: dict) -> dict:
    """By block ``(out_idx, in_idx)``: its ``largest`` entry, or where that is 0
    (a block zero throughout) the largest of its output's blocks. Rounding in
    an AD result scales with the terms it shares with the output's other
    blocks even where the block is zero in exact arithmetic: torch's forward
    over reverse of logcumsumexp, whose second derivative is 0 where one input
    is 1e4 above the rest, gives up to 4.6e-13 there (40 seeds) beside a first
    derivative's block of 1 (tests/gradcheck/test_zero_block_rounding.py)."""
    top = {}
    for (o, _), value in largest.items():
        top[o] = max(top.get(o, 0.0), value)
    return {(o, i): value if value > 0 else top[o] for (o, i), value in largest.items()}


# An entry no step resolved (every step straddled a jump) is evidence neither for
# nor against the formula: it is compared as 0 within an infinite tolerance, and
# reported once as unresolved (``verdict.faults``). Dense, chunked and streamed
# comparisons all apply these two.

def no_evidence(tolerance: np.ndarray, unresolved: np.ndarray | None) -> np.ndarray:
    """``tolerance`` (or an error estimate) made infinite where ``unresolved``."""
    return tolerance if unresolved is None else np.where(unresolved, np.inf, tolerance)


def as_zero(values: np.ndarray, unresolved: np.ndarray | None) -> np.ndarray:
    """``values`` (NaN where unresolved) with 0 in the unresolved entries."""
    return values if unresolved is None else np.where(unresolved, 0.0, values)


def entry_tolerance(values: np.ndarray, error: np.ndarray | None, epsilon: float,
                    scale: float | None = None, rounding: np.ndarray | None = None) -> np.ndarray:
    """The tolerance of each entry of ``values`` (numerical, complex form) with
    its error estimate; ``scale``: the largest finite entry of the whole block
    (by default of ``values``; an array of them by cell column: ``ad_scales``);
    ``rounding``: the analytical side's rounding allowance when known (a
    low-precision formula's, ``gradcheck.lowprec.lowprecision``), else one from
    ``epsilon``."""
    values = np.abs(values)
    error = np.zeros_like(values) if error is None else error
    if rounding is None:
        if scale is None:
            scale = largest_finite(values)
        rounding = np.sqrt(epsilon) / 2 * values + AD_ULPS * epsilon * scale
    return SAFETY * error + rounding + 1e-300


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
