"""Doubles that came through a narrower dtype: which grid an array lies on.

A float64 function that casts down to float32 (bfloat16, float16) and back
inside returns doubles that are all float32 numbers, and its derivatives
carry float32's rounding, not double precision's. A random double lies on
float32's grid with odds of about ``2**-29``, so an array of them that lies
there throughout came through it; whole numbers and a few constants say
nothing (``GRID_ENTRIES``), and neither do values with few significant bits,
a quantizer's ``round(16 x) / 16``, which lie on every grid (``FULL``).
"""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np

#: distinct values, not whole numbers, that must need most of their grid's bits
#: (``FULL``) before the grid says anything: a random double lies on float32's grid with
#: odds of about 2**-29 apiece, while a constant or two of the code
#: (hardsigmoid's float32(1/6)) may lie on it alone; three is a newcomer's
#: ``randn(3)``
GRID_ENTRIES = 3
#: by dtype, the significant bits a value needs to "use" its grid: a number
#: rounded to float32 needs more than 12 of its 24 with odds of 1 - 2**-12; a
#: quantizer's ``k / 16`` (a few significant bits) lies on every grid without
#: needing them, and bfloat16's and float16's few bits leave little room
#: between the two: one of their last two bits set (odds of 3/4)
FULL = {"bfloat16": 7, "float16": 10, "float32": 13}
#: finite values looked at first: a double-precision array is off the grid
#: at its first entries, and is told so without a pass over all of it
GLANCE = 64

#: machine epsilon of each narrow dtype (NumPy has no bfloat16 to ask)
EPSILONS = {"bfloat16": 2.0 ** -7, "float16": 2.0 ** -10, "float32": 2.0 ** -23}

#: by (order, output index), the narrower dtype a function's outputs are known
#: to come through: what its given inputs showed, for the points explored around
#: them, where an exact zero or a huge value may leave too few values to tell
_KNOWN: ContextVar[dict] = ContextVar("adcheck_computed_in", default={})


@contextmanager
def known(found: dict):
    """In the block, ``known_dtype`` answers from ``found`` as well ({(order,
    out): dtype}; ``out`` ``None``: every output of a check of that order)."""
    token = _KNOWN.set({**_KNOWN.get(), **found})
    try:
        yield
    finally:
        _KNOWN.reset(token)


def known_dtype(order: int, out_idx: int) -> str | None:
    """The dtype output ``out_idx`` of a check of ``order`` is known to be
    computed in (``known``), or ``None``."""
    found = _KNOWN.get()
    return found.get((order, out_idx)) or found.get((order, None))


def coarsest(names) -> str | None:
    """The least precise of the narrow dtypes ``names`` (``None`` if none)."""
    names = [n for n in names if n]
    return max(names, key=epsilon_of) if names else None


def narrow_grid(values) -> str | None:
    """The narrowest of bfloat16, float16 and float32 whose grid every finite
    entry of ``values`` lies on, when ``GRID_ENTRIES`` distinct ones (not whole
    numbers) need ``FULL`` of that grid's significant bits; else ``None``."""
    values = np.asarray(values)
    if values.dtype.kind not in "fc":
        return None
    if values.size and values.dtype == np.float64:   # (one entry tells most doubles, in 1 us)
        first = float(values.flat[0])   # (NaN, inf and float32's overflow go on)
        if abs(first) < 3e38 and float(np.float32(first)) != first:
            return None
    if values.dtype.kind == "c":
        values = np.concatenate([values.real.ravel(), values.imag.ravel()])
    values = values.astype(np.float64, copy=False).ravel()
    glance = values[:GLANCE]
    if not _on_float32(glance[np.isfinite(glance)]):
        return None
    finite = values[np.isfinite(values)]
    if not _on_float32(finite):
        return None
    inner = finite[finite != np.round(finite)]
    if inner.size < GRID_ENTRIES:
        return None
    single = inner.astype(np.float32)
    bits = single.view(np.uint32)
    # (the coarsest grid first: bfloat16's 8 bits, float16's 11, float32's 24;
    # a bfloat16 number in float16's range is a float16 number too)
    if not np.any(bits & 0xFFFF):
        name, stored, precision = "bfloat16", (bits >> 16) & 0x7F, 8
    else:
        with np.errstate(over="ignore"):
            half = inner.astype(np.float16)
        if np.array_equal(half.astype(np.float64), inner):
            name, stored, precision = "float16", half.view(np.uint16) & 0x3FF, 11
        else:
            name, stored, precision = "float32", bits & 0x7FFFFF, 24
    using = np.unique(inner[_significant(stored, precision) >= FULL[name]])
    return name if using.size >= GRID_ENTRIES else None


#: how far a derivative computed in a narrower dtype inside strays from the
#: double-precision one at most, relative to the block's largest entry: that
#: dtype's rounding carried through a formula (``CAST_UNITS`` of its epsilon),
#: and never more than ``CAST_MOST``: an error beyond is a wrong formula whose
#: values happen to be stored in that dtype (a filter's float32 taps)
CAST_UNITS = 1024.0
CAST_MOST = 0.1


def within_rounding_of(name: str, expected, actual) -> bool:
    """Whether ``actual`` differs from ``expected`` by no more than dtype ``name``'s
    rounding could make it (``CAST_UNITS``, ``CAST_MOST``)."""
    e, a = np.asarray(expected), np.asarray(actual)
    finite = np.isfinite(e) & np.isfinite(a)
    if e.shape != a.shape or not finite.any():
        return False
    scale = float(np.abs(e[finite]).max())
    error = float(np.abs(a[finite] - e[finite]).max())
    return error <= min(CAST_UNITS * EPSILONS[name], CAST_MOST) * scale


def _significant(stored: np.ndarray, precision: int) -> np.ndarray:
    """Bits each significand needs, from its stored bits (the leading 1 implied)."""
    stored = stored.astype(np.int64)
    lowest = stored & -stored   # (its lowest set bit; 0 for a power of 2)
    trailing = np.where(stored == 0, precision - 1,
                        np.log2(np.maximum(lowest, 1)).astype(np.int64))
    return precision - trailing


def on_a_grid(values) -> bool:
    """Whether every finite entry of ``values`` (a floating array) lies on
    float32's grid, and so on a grid some narrower dtype's computation could
    keep: data cast up from float32 or bfloat16, however few bits it uses."""
    values = np.asarray(values)
    if values.dtype.kind == "c":
        values = np.concatenate([values.real.ravel(), values.imag.ravel()])
    if values.dtype.kind != "f":
        return False
    values = values.astype(np.float64, copy=False).ravel()
    return _on_float32(values[np.isfinite(values)])


#: stairs finer than this share of the largest value are rounding, not stairs
STAIRS = 2.0 ** -20


def stair_width(values) -> float | None:
    """The coarsest power of 2 or of 10 that every finite entry of ``values``
    (real, or the real and imaginary parts) is a whole multiple of, when it is
    at least ``STAIRS`` of the largest and ``GRID_ENTRIES`` distinct values lie
    on it: a function whose values move in stairs (rounding, a quantizer, the
    cancellation of ``(x + 1e15) - 1e15``), else ``None``."""
    values = np.asarray(values)
    if values.dtype.kind == "c":
        values = np.concatenate([values.real.ravel(), values.imag.ravel()])
    if values.dtype.kind != "f":
        return None
    finite = values[np.isfinite(values)].astype(np.float64, copy=False)
    top = float(np.max(np.abs(finite), initial=0.0))
    if top == 0.0 or np.unique(finite).size < GRID_ENTRIES:
        return None
    finest = np.floor(np.log2(top * STAIRS))
    widths = [2.0 ** k for k in np.arange(np.floor(np.log2(top)), finest - 1, -1)]
    widths += [10.0 ** k for k in np.arange(np.floor(np.log10(top)),
                                             np.floor(np.log10(top * STAIRS)) - 1, -1)]
    for width in sorted(widths, reverse=True):
        steps = finite / width
        if np.all(np.abs(steps - np.round(steps)) <= 1e-9 * np.maximum(1.0, np.abs(steps))):
            return float(width)
    return None


def epsilon_of(name: str) -> float:
    """Machine epsilon of the narrow dtype ``narrow_grid`` named."""
    return EPSILONS[name]


def _on_float32(finite: np.ndarray) -> bool:
    with np.errstate(over="ignore", invalid="ignore"):
        return bool(np.array_equal(finite.astype(np.float32).astype(np.float64), finite))
