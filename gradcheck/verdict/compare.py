"""The one comparator: what was expected against what was found, within a tolerance.

Every check reduces to a ``Result``: which check, which (output, input) pair,
which two things were compared (``mode`` against ``against``), whether they
agree, the largest error, where it is and the tolerance there. ``compare``
is the one comparison that makes one (expected, actual, a tolerance per
entry); each check adds only its diagnosis. ``compare_pair`` applies it to
a pair of Jacobian blocks, with PyTorch's tolerance and ``diagnosis``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from adcheck.gradcheck.verdict.diagnosis import diagnose
from adcheck.gradcheck.core.jacobian import Jacobian
from adcheck.gradcheck.core.serialize import json_array, json_float
from adcheck.gradcheck.core.coords import largest_finite
from adcheck.gradcheck.core.quiet import quiet, restore
from adcheck.gradcheck.numerics.precise import zero_blocks_shared
from adcheck.gradcheck.numerics.scheme import torch_tolerance


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
    #: where ``expected[0, 0]`` sits in the whole block when the arrays are a
    #: window of it (a compressed or chunked check), else ``None``
    origin: tuple | None = None
    #: what the comparison could resolve (``gradcheck.numerics.precision.Precision``), when
    #: known: set for precise checks of a formula narrower than double precision
    precision: object = None
    #: the input's name (a module's parameter, ``"layer.0.weight"``; a pytree leaf's
    #: path), or ``None`` when the inputs are not named
    in_name: str | None = None
    #: a failure found at an explored point (``gradcheck.explore.point.Explored``):
    #: the inputs it was found at, not the check's own; ``None`` for the given inputs
    point: object = None

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
            "origin": None if self.origin is None else [int(k) for k in self.origin],
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
    expected, actual = np.asarray(expected), np.asarray(actual)
    same = _same_nonfinite(expected, actual) if same_nonfinite else None
    return _errors_where(expected, actual, same)


def _errors_where(expected: np.ndarray, actual: np.ndarray, same,
                  fix_nan: bool = True) -> np.ndarray:
    """``entry_errors`` with the entries that hold the same non-finite value
    (``same``, or ``None`` for none) found already; ``fix_nan=False`` leaves
    NaN errors as they are."""
    token = quiet()   # (np.errstate(invalid="ignore"), a third of the cost: several a check)
    try:
        err = np.abs(actual - expected)
    finally:
        restore(token)
    err = err if err.dtype == np.float64 else err.astype(np.float64)
    if same is not None:
        err[same] = 0.0
    if fix_nan:
        nan = np.isnan(err)
        if nan.any():
            err[nan] = np.inf
    return err


def _same_nonfinite(expected: np.ndarray, actual: np.ndarray) -> np.ndarray | None:
    """Where ``expected`` and ``actual`` hold the same non-finite value (``None``
    when neither holds any: the usual case, found in two passes)."""
    if np.isfinite(expected).all() and np.isfinite(actual).all():
        return None

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
    return _worst(err, err if not bad.any() else np.where(bad, err, -1.0))


def _worst(err: np.ndarray, masked: np.ndarray) -> tuple:
    """The largest entry of ``masked`` (a NaN first): its error in ``err`` and where."""
    flat = int(masked.argmax())
    where = []
    for size in reversed(err.shape):   # (np.unravel_index, without its microsecond)
        flat, k = divmod(flat, size)
        where.append(k)
    where = tuple(reversed(where))
    return float(err[where]), where


def compare(check: str, mode: str, against: str, out_idx: int | None, in_idx: int | None,
            expected: np.ndarray, actual: np.ndarray, tol, same_nonfinite: bool = False) -> Result:
    """The one comparison: ``actual`` passes where ``|actual - expected| <= tol``
    entry by entry (``tol`` an array of their shape, or one number; NaN never
    passes, unless ``same_nonfinite`` and both are NaN: see ``entry_errors``).
    The ``Result`` holds the largest error (one that fails first), where it
    is, the tolerance there, and both arrays; no diagnosis."""
    # (arrays as they are: asarray's calls cost as much as the subtraction on a small block)
    e = expected if type(expected) is np.ndarray else np.asarray(expected)
    a = actual if type(actual) is np.ndarray else np.asarray(actual)
    if type(tol) is not np.ndarray or tol.dtype != np.float64:
        tol = np.asarray(tol, dtype=np.float64)
    err = _errors_where(e, a, None, fix_nan=False)
    if err.size and np.logical_and.reduce(err <= tol, axis=None):   # (all(), no frame)
        # the usual case, every check ends here several times: no NaN (it never
        # passes), so no entry holds the same non-finite value twice either
        max_error, where = _worst(err, err)
        return Result(check, mode, against, out_idx, in_idx, True, max_error, where,
                      _at(tol, err.shape, where), expected, actual)
    same = _same_nonfinite(e, a) if same_nonfinite else None
    if same is not None:
        err[same] = 0.0
        # a tolerance computed from a NaN is NaN: the same NaN passes anyway
        tol = np.where(same, np.inf, tol)
    nan = np.isnan(err)
    if nan.any():
        err[nan] = np.inf
    passed = bool(np.all(err <= tol))
    max_error, where = worst(err, np.broadcast_to(tol, err.shape))
    return Result(check, mode, against, out_idx, in_idx, passed, max_error, where,
                  None if where is None else _at(tol, err.shape, where), expected, actual)


def _at(tol: np.ndarray, shape: tuple, where: tuple) -> float:
    """The tolerance at ``where`` of a tolerance broadcast to ``shape``."""
    if tol.ndim == 0:
        return float(tol)
    return float(tol[where] if tol.shape == shape else np.broadcast_to(tol, shape)[where])


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
        tol = torch_tolerance(e, atol, rtol)
    result = compare(check, actual.mode, expected.mode, out_idx, in_idx, e, a, tol,
                     same_nonfinite)
    if not result.passed and explain:
        layout = actual.layout
        result.diagnosis = diagnose(
            expected[out_idx, in_idx], actual[out_idx, in_idx], tol, actual.mode,
            layout.out_complex[out_idx], layout.in_complex[in_idx], against=expected.mode)
    return result


def shared_magnitude(norms: dict) -> dict:
    """The floor of rounding tolerances of every pair: the largest of the
    numerical blocks' norms ``norms`` (rounding in one block's AD result scales
    with the terms it shares with the others, even where that block is zero)."""
    largest = max(norms.values(), default=0.0)
    return dict.fromkeys(norms, largest)


def set_magnitudes(report, tallies: dict) -> None:
    """``report.magnitudes`` of a streamed check (``shared_magnitude``) from its
    tallies, keyed ``(mode, out_idx, in_idx)``: the Frobenius norms (of the
    finite entries) of the numerical blocks they observed."""
    report.magnitudes = shared_magnitude({key[1:]: float(np.sqrt(t.finite_square))
                                          for key, t in tallies.items() if key[0] == "numerical"})


def share_zero_scales(tallies: dict) -> None:
    """A streamed check's blocks zero throughout take their output's largest
    entry for their floor's scale, as a dense check's do
    (``precise.zero_blocks_shared``); ``tallies`` as in ``set_magnitudes``."""
    shared = zero_blocks_shared({key[1:]: t.scale for key, t in tallies.items()
                                 if key[0] == "numerical"})
    for (mode, o, i), tally in tallies.items():
        if mode != "numerical" and not tally.scale:
            tally.scale = shared.get((o, i), 0.0)


def compare_jacobians(check: str, expected: Jacobian, actual: Jacobian, atol: float,
                      rtol: float, tolerances: dict | None = None, explain: bool = True,
                      same_nonfinite: bool = False) -> list:
    """``compare_pair`` for every pair the two Jacobians share."""
    if actual is expected and same_nonfinite and tolerances is None and 0 <= atol < np.inf \
            and 0 <= rtol < np.inf:
        # (a repeat whose batches gave the first run's bits is the first Jacobian itself:
        # gradcheck.core.repeat; every pair then passes, found without the array passes)
        return [_compared_with_itself(check, actual, *key, atol, rtol)
                for key in sorted(actual.keys())]
    results = []
    for key in sorted(actual.keys()):
        if key in expected:
            tol = None if tolerances is None else tolerances.get(key)
            results.append(compare_pair(check, expected, actual, *key, atol, rtol, tol, explain,
                                        same_nonfinite))
    return results


def _compared_with_itself(check: str, jac: Jacobian, out_idx: int, in_idx: int, atol: float,
                          rtol: float) -> Result:
    """``compare_pair(check, jac, jac, out_idx, in_idx, atol, rtol, same_nonfinite=True)``,
    field for field: every error is 0 (a NaN or inf entry is the same value on both sides),
    so it passes, the first entry is the largest error, and the tolerance there is PyTorch's
    (infinite at a NaN or inf entry, where ``compare`` lets the same value pass)."""
    e, a = jac.complex_form(out_idx, in_idx), jac.complex_form(out_idx, in_idx)
    if e.size == 0:
        return Result(check, jac.mode, jac.mode, out_idx, in_idx, True, 0.0, None, None, e, a)
    where = (0,) * e.ndim
    first = e[(slice(0, 1),) * e.ndim]
    if e.dtype == np.float64:   # (torch_tolerance's float64 arithmetic on one number)
        value = float(first.reshape(-1)[0])
        tol = float(atol + rtol * abs(value)) if math.isfinite(value) else np.inf
    else:
        tol = float(torch_tolerance(first, atol, rtol).reshape(-1)[0]) \
            if np.logical_and.reduce(np.isfinite(first), axis=None) else np.inf
    return Result(check, jac.mode, jac.mode, out_idx, in_idx, True, 0.0, where, tol, e, a)


#: entries per piece of a chunk that ``Tally.add`` takes at once: its temporaries
#: then stay in cache, and a chunk is read a few times from memory, not a few dozen
PIECE = 2 ** 15


class Tally:
    """``compare`` over a block seen a chunk at a time, without holding it.

    Each ``add`` brings expected and actual entries of some columns (all rows)
    and their tolerance in two parts: ``base`` (per entry) and a floor of
    ``floor_unit`` times the largest ``|expected|`` of the whole block, which
    is known only at the end. ``result`` then says what ``compare`` would on
    the whole block: passed, the largest error (one that fails first) and
    where, the tolerance there. Failing candidates are kept ``KEEP`` at a
    time (those above the floor so far, largest errors first); the floor only
    grows, so the final failures are among them unless more than ``KEEP``
    entries lie between the floor seen so far and the final one. It also
    counts what the diagnosis needs (``sums``, ``wrong``, ``active``,
    failures on and off the diagonal, the first failing entry, entries above
    the tolerance on each side, nonzero analytical entries).
    """

    KEEP = 256

    def __init__(self, floor_unit: float = 0.0):
        self.floor_unit = floor_unit
        self.scale = 0.0
        self.best = (-1.0, None, 0.0)           # (error, where, tolerance but the floor)
        self.candidates: list = []              # (error, where, base tolerance)
        self.sums = np.zeros(3)                 # e.e, e.a, a.a
        self.finite_square = 0.0                # e.e over the finite entries of e only
        self.counts = {"wrong": 0, "active": 0, "diagonal": 0, "off": 0,
                       "expected": 0, "actual": 0, "nonzero": 0, "entries": 0}
        self.first: tuple | None = None
        #: NaN or inf entries by side ("expected", "actual"): [count, first
        #: (row-major), its value, the expected value there (actual's)]
        self.nonfinite: dict = {}

    def floor(self) -> float:
        return self.floor_unit * self.scale + 1e-300 if self.floor_unit else 0.0

    def add(self, expected: np.ndarray, actual: np.ndarray, base: np.ndarray,
            row0: int = 0, col0: int = 0, scale: float | None = None, also=()) -> None:
        """Entries ``[row0:, col0:]`` of the block (complex form, 2-D), taken a
        piece at a time (``pieces``: the temporaries then stay in cache);
        ``scale``: the largest ``|expected|`` when the caller knows it (each
        tally of a chunk would find it again, a pass over it); ``also``: other
        tallies that compare the same entries (another mode whose block is
        equal to this one, bit for bit), each counted once for all."""
        if expected.size == 0:
            return
        tallies = [self, *also]
        for tally in tallies:
            tally._grow(expected, scale)
        floor = self.floor()
        for tally in tallies[1:]:
            if tally.floor() != floor:   # (another floor: its own comparison)
                tally.add(expected, actual, base, row0, col0, scale)
        tallies = [t for t in tallies if t.floor() == floor]
        for (r, c), e, a, b in zip(_origins(expected), pieces(expected), pieces(actual, expected),
                                   pieces(base, expected)):
            found = _compared(e, a, b, floor, row0 + r, col0 + c, self.KEEP)
            for tally in tallies:
                tally._take(*found)

    def observe(self, expected: np.ndarray, scale: float | None = None) -> None:
        """Count ``expected`` into the block's scale and ``sums[0]`` only: for
        the reference block itself, compared with nothing (``scale`` as in ``add``)."""
        self._grow(expected, scale)
        if expected.size:
            square = _dot(expected, expected)
            self.sums[0] += square
            # (a NaN or inf entry is no scale: the block's norm as a dense check takes it)
            if not np.isfinite(square):
                finite = np.where(np.isfinite(expected), expected, 0.0)
                square = _dot(finite, finite)
            self.finite_square += square

    def _grow(self, expected: np.ndarray, scale: float | None) -> None:
        if scale is None and expected.size:
            scale = max(largest(piece) for piece in pieces(expected))
        if scale is not None:
            self.scale = max(self.scale, scale)

    def _take(self, best, sums, counts, first, candidates, nonfinite) -> None:
        """Count in what ``_compared`` found in a piece."""
        for side, (count, where, *values) in nonfinite.items():
            held = self.nonfinite.setdefault(side, [0, where, *values])
            held[0] += count
            if where < held[1]:
                held[1:] = [where, *values]
        if best[0] > self.best[0]:
            self.best = best
        self.sums += sums
        for key, count in counts.items():
            self.counts[key] += count
        if first is not None:
            self.first = first if self.first is None else min(self.first, first)
        if candidates:
            self.candidates = sorted(self.candidates + candidates, key=lambda item: -item[0])
            del self.candidates[self.KEEP:]

    def result(self, check, mode, against, out_idx, in_idx) -> Result:
        """The ``Result`` of the whole block (without arrays or diagnosis)."""
        floor = self.floor()
        failing = [c for c in self.candidates if not c[0] <= c[2] + floor]
        if failing:
            error, where, base = failing[0]
            return Result(check, mode, against, out_idx, in_idx, False, error, where,
                          base + floor)
        error, where, base = self.best   # (the floor as it ended: it may have grown since)
        return Result(check, mode, against, out_idx, in_idx, True, max(error, 0.0), where,
                      base + floor)


def _compared(expected, actual, base, floor, row0, col0, keep) -> tuple:
    """One piece compared: the largest error (where, the tolerance there), the
    sums and counts the diagnosis needs, the first failing entry and the
    ``keep`` worst failing ones (largest first), for ``Tally._take``."""
    err, flat = _errors(expected, actual)
    tol = base + floor if floor else base
    r, c = np.unravel_index(flat, err.shape)
    best = (float(err.flat[flat]), (int(r) + row0, int(c) + col0), float(base.flat[flat]))
    bad = ~(err <= tol)   # (a NaN tolerance never passes, as in ``compare``)
    wrong = bool(bad.any())
    sums = np.array((_dot(expected, expected), _dot(expected, actual), _dot(actual, actual)))
    nonfinite = {}
    if not np.isfinite(best[0]):   # NaN or inf on a side: the largest error says so for free
        nonfinite = {side: found for side, values, other in (("expected", expected, None),
                                                             ("actual", actual, expected))
                     if (found := _first_nonfinite(values, row0, col0, other)) is not None}
    big_e, big_a = np.abs(expected) > tol, np.abs(actual) > tol
    counts = {"expected": int(np.count_nonzero(big_e)), "actual": int(np.count_nonzero(big_a))}
    active = np.logical_or(big_e, big_a, out=big_e)
    if wrong:
        active |= bad
    counts["active"] = int(np.count_nonzero(active))
    counts["nonzero"] = int(np.count_nonzero(actual))
    counts["entries"] = expected.size
    if not wrong:
        return best, sums, counts, None, [], nonfinite
    rows, cols = np.nonzero(bad)
    on = int(np.sum(rows + row0 == cols + col0))
    counts.update(wrong=len(rows), diagonal=on, off=len(rows) - on)
    # (the first in row-major order whatever the order of the pieces)
    first = (int(rows[0]) + row0, int(cols[0]) + col0)
    worst_first = -err[rows, cols]
    if len(rows) > keep:   # the keep largest, then in order
        top = np.argpartition(worst_first, keep)[:keep]
        rows, cols, worst_first = rows[top], cols[top], worst_first[top]
    order = np.argsort(worst_first, kind="stable")
    candidates = [(float(err[i, j]), (int(i) + row0, int(j) + col0), float(base[i, j]))
                  for i, j in zip(rows[order], cols[order])]
    return best, sums, counts, first, candidates, nonfinite


def _first_nonfinite(values: np.ndarray, row0: int, col0: int,
                     other: np.ndarray | None = None) -> tuple | None:
    """``(count, (row, column), value, other's value there)`` of the NaN or inf
    entries of a piece (the first in row-major order), or ``None``."""
    bad = ~np.isfinite(values)
    if not bad.any():
        return None
    rows, cols = np.nonzero(bad)
    r, c = int(rows[0]), int(cols[0])
    return int(bad.sum()), (r + row0, c + col0), values[r, c], \
        None if other is None else other[r, c]


def largest(array: np.ndarray) -> float:
    """``max |array|`` over the finite entries (of a real array in two passes,
    without an array of absolute values; of a complex one, of the moduli): a
    NaN or inf entry is no scale, as in a dense check (``coords.largest_finite``)."""
    if not array.size:
        return 0.0
    if np.iscomplexobj(array):
        found = float(np.max(np.abs(array)))
    else:
        found = max(float(np.max(array)), -float(np.min(array)))
    return found if np.isfinite(found) else largest_finite(array)


def _errors(expected: np.ndarray, actual: np.ndarray) -> tuple:
    """``entry_errors`` (no same-NaN rule) and where the largest is, with one
    temporary (a NaN, which ``argmax`` finds first, is rarely there)."""
    with np.errstate(invalid="ignore"):
        err = np.subtract(actual, expected)
        err = np.abs(err, out=err) if err.dtype == np.float64 else np.abs(err).astype(np.float64)
    flat = int(np.argmax(err))
    if np.isnan(err.flat[flat]):
        err[np.isnan(err)] = np.inf
        flat = int(np.argmax(err))
    return err, flat


def pieces(array: np.ndarray, like: np.ndarray | None = None) -> list:
    """``array`` (2-D) in pieces of about ``PIECE`` entries: bands of rows, or of
    columns when ``like`` (default ``array``) is stored a column after another,
    so that each piece is one stretch of memory. Arrays of one shape give
    matching pieces for the same ``like``."""
    like = array if like is None else like
    return [array[span] for span in _spans(like)]


def _origins(like: np.ndarray) -> list:
    """Where each of ``pieces(_, like)`` starts: ``(row, column)``."""
    return [(span[0].start or 0, span[1].start or 0) for span in _spans(like)]


def _spans(like: np.ndarray) -> list:
    rows, cols = like.shape
    by_column = like.strides[0] < like.strides[1] and cols > 1
    across, along = (cols, rows) if by_column else (rows, cols)
    step = max(1, PIECE // max(1, along))
    bands = [slice(k, min(k + step, across)) for k in range(0, across, step)]
    whole = slice(0, along)
    return [(whole, band) if by_column else (band, whole) for band in bands]


def _dot(x: np.ndarray, y: np.ndarray) -> float:
    """The real inner product of two arrays of one shape (over the real and
    imaginary parts of complex ones), without flattening copies of a chunk
    that is a slice of a larger array."""
    if np.iscomplexobj(x) or np.iscomplexobj(y):
        x, y = np.asarray(x, dtype=complex), np.asarray(y, dtype=complex)
        return _dot(x.real, y.real) + _dot(x.imag, y.imag)
    for order, flag in (("C", "C_CONTIGUOUS"), ("F", "F_CONTIGUOUS")):
        if x.flags[flag] and y.flags[flag]:   # one stretch of memory each, in one order
            return float(np.dot(x.ravel(order), y.ravel(order)))
    letters = "abcdefgh"[:np.ndim(x)]
    return float(np.einsum(f"{letters},{letters}->", x, y))
