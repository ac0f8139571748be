"""Special functions NumPy lacks: erfinv lgamma digamma polygamma (real inputs).

The values come from the standard library (lgamma) and mpmath (erfinv,
digamma, polygamma), one element at a time: exact to double precision,
slow, and fine for a reference engine. Each derivative is the next function
of the family (lgamma' = digamma, digamma' = polygamma(1), ...), so every
order of derivative is available.
"""
from __future__ import annotations

import math

import mpmath
import numpy as np

from .dispatch import call
from .opdef import OPS, defelementwise, public

F = dict(promote=("self",), to_float=True, inplace=True)


def _apply(fn, name, self, *args):
    if np.iscomplexobj(self):
        raise RuntimeError(f"{name} is not implemented for complex tensors")
    return np.asarray(np.frompyfunc(lambda v: fn(v, *args), 1, 1)(self), dtype=self.dtype)


def _elementwise(fn, name):
    def forward(self):
        return _apply(fn, name, self)
    forward.__name__ = name
    return forward


def _erfinv(v):
    v = float(v)
    if math.isnan(v) or abs(v) > 1:
        return math.nan
    return math.copysign(math.inf, v) if abs(v) == 1 else float(mpmath.erfinv(v))


def _lgamma(v):
    v = float(v)
    if v <= 0 and v == math.floor(v):
        return math.inf                        # the poles
    return math.lgamma(v)


def _digamma(v):
    v = float(v)
    if v == 0:
        return math.copysign(math.inf, -math.copysign(1.0, v))   # -inf at +0, inf at -0
    if v < 0 and v == math.floor(v):
        return math.nan
    return float(mpmath.digamma(v)) if math.isfinite(v) else (math.inf if v > 0 else math.nan)


def _polygamma(v, n):
    v = float(v)
    if n == 0:
        return _digamma(v)
    if v <= 0 and v == math.floor(v):
        return math.inf if n % 2 else math.nan
    return float(mpmath.polygamma(n, v)) if math.isfinite(v) else (0.0 if v > 0 else math.nan)


defelementwise("erfinv", _elementwise(_erfinv, "erfinv"),
               lambda result: (result * result).exp() * (math.sqrt(math.pi) / 2), **F)
defelementwise("lgamma", _elementwise(_lgamma, "lgamma"), lambda self: self.digamma(), **F)
defelementwise("digamma", _elementwise(_digamma, "digamma"),
               lambda self: call(OPS["polygamma"], self, 1), **F)


def _polygamma_forward(self, n):
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return _apply(_polygamma, "polygamma", self, int(n))


defelementwise("polygamma", _polygamma_forward,
               lambda self, n: call(OPS["polygamma"], self, n + 1), method=None,
               function=False, **F)


@public("polygamma", method=False)
def polygamma(n, input):
    """The ``n``-th derivative of digamma at ``input``."""
    return call(OPS["polygamma"], input, n)


@public("polygamma", function=False)
def polygamma_method(self, n):
    """``polygamma(n, self)``."""
    return call(OPS["polygamma"], self, n)
