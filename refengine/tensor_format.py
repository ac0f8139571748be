"""Printing tensors the way PyTorch prints them: ``tensor([2., 4.], grad_fn=<MulBackward0>)``.

The rules are PyTorch's: the column width comes from the nonzero finite
values only; floats that are all integers print as ``2.``; a spread of more
than 1000 between the largest and smallest magnitude (or values past 1e8,
or below 1e-4 for non-integers) switches to scientific notation; tensors of
more than 1000 elements are summarised with ``...``; lines wrap at 80.
"""
from __future__ import annotations

import math

import numpy as np

from . import dtypes

_LINEWIDTH = 80
_THRESHOLD = 1000
_EDGE = 3
_PRECISION = 4


class _Formatter:
    """Formats the elements of one (real) array at a common width."""

    def __init__(self, values: np.ndarray):
        self.floating = values.dtype.kind == "f"
        self.int_mode, self.sci_mode, self.width = True, False, 1
        flat = values.ravel()
        if not self.floating:
            self.width = max([1] + [len(self._plain(v)) for v in flat])
            return
        finite = flat[np.isfinite(flat) & (flat != 0)]
        if finite.size == 0:
            return
        mags = np.abs(finite)
        hi, lo = float(mags.max()), float(mags.min())
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        if self.int_mode:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8
        else:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        for v in finite:
            text = self._text(float(v))
            self.width = max(self.width, len(text))

    @staticmethod
    def _plain(v) -> str:
        if isinstance(v, (bool, np.bool_)):
            return "True" if v else "False"
        return str(int(v))

    def _text(self, v: float) -> str:
        if not math.isfinite(v):
            return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
        if self.sci_mode:
            return f"{v:.{_PRECISION}e}"
        if self.int_mode:
            return f"{v:.0f}."
        return f"{v:.{_PRECISION}f}"

    def format(self, v) -> str:
        text = self._text(float(v)) if self.floating else self._plain(v)
        return text.rjust(self.width)


def _summarized(a: np.ndarray) -> np.ndarray:
    """The elements that a summarised print shows (for building formatters)."""
    if a.ndim == 0:
        return a
    if a.shape[0] > 2 * _EDGE:
        a = np.concatenate([a[:_EDGE], a[-_EDGE:]])
    return np.stack([_summarized(x) for x in a]) if a.ndim > 1 else a


class _Printer:
    def __init__(self, arr: np.ndarray, summarize: bool):
        self.summarize = summarize
        shown = _summarized(arr) if summarize else arr
        self.complex = arr.dtype.kind == "c"
        if self.complex:
            self.real, self.imag = _Formatter(shown.real), _Formatter(shown.imag)
        else:
            self.real, self.imag = _Formatter(shown), None

    def scalar(self, v) -> str:
        if not self.complex:
            return self.real.format(v)
        imag = (self.imag.format(v.imag) + "j").lstrip()
        sign = "" if imag[0] in "+-" else "+"
        return self.real.format(v.real) + sign + imag

    def vector(self, a: np.ndarray, indent: int) -> str:
        width = self.real.width + 2 + ((self.imag.width + 1) if self.complex else 0)
        per_line = max(1, (_LINEWIDTH - indent) // width)
        if self.summarize and a.shape[0] > 2 * _EDGE:
            items = ([self.scalar(v) for v in a[:_EDGE]] + [" ..."] +
                     [self.scalar(v) for v in a[-_EDGE:]])
        else:
            items = [self.scalar(v) for v in a]
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"

    def render(self, a: np.ndarray, indent: int) -> str:
        if a.ndim == 0:
            return self.scalar(a[()])
        if a.ndim == 1:
            return self.vector(a, indent)
        if self.summarize and a.shape[0] > 2 * _EDGE:
            rows = ([self.render(a[i], indent + 1) for i in range(_EDGE)] + ["..."] +
                    [self.render(a[i], indent + 1) for i in range(a.shape[0] - _EDGE, a.shape[0])])
        else:
            rows = [self.render(x, indent + 1) for x in a]
        return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def _implicit_dtype(dt) -> bool:
    default = dtypes.get_default_dtype()
    return dt in (default, dtypes.int64, dtypes.bool_, dtypes.to_complex(default))


def format_tensor(t) -> str:
    arr = t._data
    prefix = "tensor("
    suffixes = []
    if arr.size == 0 and arr.ndim != 1:
        body = "[]"
        suffixes.append(f"size={tuple(arr.shape)}")
    elif arr.size == 0:
        body = "[]"
    else:
        body = _Printer(arr, arr.size > _THRESHOLD).render(arr, len(prefix))
    # an empty tensor shows any dtype but the default float one
    if not _implicit_dtype(t.dtype) or (arr.size == 0 and t.dtype is not dtypes.get_default_dtype()):
        suffixes.append(f"dtype={t.dtype!r}")
    try:
        fn = t.grad_fn
    except RuntimeError:
        # a view whose grad_fn is refused after a write to its base still
        # prints, as in torch
        suffixes.append("grad_fn=<Invalid>")
        return prefix + ", ".join([body] + suffixes) + ")"
    if fn is not None:
        suffixes.append(f"grad_fn=<{fn.name()}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return prefix + ", ".join([body] + suffixes) + ")"
