"""Printing tensors the way PyTorch prints them: ``tensor([2., 4.], grad_fn=<MulBackward0>)``."""
from __future__ import annotations

import math

import numpy as np

from . import dtypes

_LINEWIDTH = 80


def _real_formatter(values: np.ndarray):
    finite = values[np.isfinite(values)]
    nonzero = np.abs(finite[finite != 0])
    if finite.size == 0 or nonzero.size == 0:
        int_mode, sci = True, False
    else:
        int_mode = bool(np.all(finite == np.ceil(finite)))
        hi, lo = nonzero.max(), nonzero.min()
        sci = hi > 1e8 if int_mode else (hi / lo > 1000 or hi > 1e8 or lo < 1e-4)

    def fmt(v: float) -> str:
        if not math.isfinite(v):
            return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
        if sci:
            return f"{v:.4e}"
        if int_mode:
            return f"{v:.0f}."
        return f"{v:.4f}"
    return fmt


def _element_formatter(arr: np.ndarray):
    if arr.dtype == np.bool_:
        return lambda v: "True" if v else "False"
    if arr.dtype.kind in "iu":
        return lambda v: str(int(v))
    if arr.dtype.kind == "c":
        fr, fi = _real_formatter(arr.real.ravel()), _real_formatter(arr.imag.ravel())

        def fmt(v):
            im = fi(float(v.imag))
            sign = "" if im.startswith("-") else "+"
            return f"{fr(float(v.real))}{sign}{im}j"
        return fmt
    return lambda v, f=_real_formatter(arr.ravel()): f(float(v))


def _body(arr: np.ndarray, indent: int) -> str:
    fmt = _element_formatter(arr)
    width = max((len(fmt(v)) for v in arr.ravel()), default=0)

    def render(a: np.ndarray, ind: int) -> str:
        if a.ndim == 0:
            return fmt(a.item() if a.dtype.kind != "c" else complex(a))
        if a.ndim == 1:
            items = [fmt(v).rjust(width) for v in (a if a.dtype.kind != "c" else a.astype(complex))]
            per_line = max(1, (_LINEWIDTH - ind) // (width + 2))
            lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
            return "[" + (",\n" + " " * (ind + 1)).join(lines) + "]"
        sep = "," + "\n" * (a.ndim - 1) + " " * (ind + 1)
        return "[" + sep.join(render(sub, ind + 1) for sub in a) + "]"
    return render(arr, indent)


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
    else:
        body = _body(arr, len(prefix))
    if not _implicit_dtype(t.dtype) or (arr.size == 0 and t.dtype is not dtypes.get_default_dtype()):
        suffixes.append(f"dtype={t.dtype!r}")
    fn = t.grad_fn
    if fn is not None:
        suffixes.append(f"grad_fn=<{fn.name()}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return prefix + ", ".join([body] + suffixes) + ")"
