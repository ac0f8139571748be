"""OpInfos for ``refengine/ops/elementwise.py``: the unary elementwise ops."""
from __future__ import annotations

import math

import mpmath
import numpy as np

import adcheck.refengine as E

from .. import domains as D
from ..core import FLOATING, FLOATING_AND_COMPLEX, OpInfo, SampleInput
from ..entrywise import entrywise
from ..registry import register
from ..samples import make, unary

COMPLEX = (E.complex64, E.complex128)

FAMILY = "elementwise"


def mp_elementwise(fn):
    """An mpmath reference applying ``fn`` to each entry (object arrays in and out)."""
    vec = entrywise(fn)   # (each distinct entry computed once: see opinfo.entrywise)

    def ref(x, *args, **kwargs):
        return vec(x)
    ref.__name__ = f"mp_{getattr(fn, '__name__', 'fn')}"
    return ref


def _np_erf(x):
    return np.vectorize(math.erf, otypes=[x.dtype])(x) if x.size else x.copy()


def _np_erfc(x):
    return np.vectorize(math.erfc, otypes=[x.dtype])(x) if x.size else x.copy()


def _np_sgn(x):
    mag = np.abs(x)
    return np.where(mag == 0, 0, x / np.where(mag == 0, 1, mag)).astype(x.dtype)


def _mp_sgn(x):
    return x / abs(x) if x != 0 else x * 0


def _special(values, rule):
    """A special-point sample function: one vector of the given values."""
    def sample_func(opinfo, dtype):
        yield SampleInput(make((len(values),), values=values), name="special points", rule=rule)
    return sample_func


_KINK = (-1.0, 0.0, 0.0, 2.0)

# name, domain, NumPy reference, mpmath function, dtypes
_TABLE = (
    ("exp", D.MODERATE, np.exp, mpmath.exp, FLOATING_AND_COMPLEX),
    ("expm1", D.MODERATE, np.expm1, mpmath.expm1, FLOATING_AND_COMPLEX),
    ("log", D.POSITIVE, np.log, mpmath.log, FLOATING_AND_COMPLEX),
    ("log1p", D.ABOVE_MINUS_ONE, np.log1p, mpmath.log1p, FLOATING_AND_COMPLEX),
    ("log2", D.POSITIVE, np.log2, lambda x: mpmath.log(x, 2), FLOATING_AND_COMPLEX),
    ("log10", D.POSITIVE, np.log10, mpmath.log10, FLOATING_AND_COMPLEX),
    ("sqrt", D.POSITIVE, np.sqrt, mpmath.sqrt, FLOATING_AND_COMPLEX),
    ("rsqrt", D.POSITIVE, lambda x: 1 / np.sqrt(x), lambda x: 1 / mpmath.sqrt(x),
     FLOATING_AND_COMPLEX),
    ("reciprocal", D.NONZERO, lambda x: 1 / x, lambda x: 1 / x, FLOATING_AND_COMPLEX),
    ("sin", D.REAL, np.sin, mpmath.sin, FLOATING_AND_COMPLEX),
    ("cos", D.REAL, np.cos, mpmath.cos, FLOATING_AND_COMPLEX),
    ("tan", D.TAN, np.tan, mpmath.tan, FLOATING_AND_COMPLEX),
    ("sinh", D.MODERATE, np.sinh, mpmath.sinh, FLOATING_AND_COMPLEX),
    ("cosh", D.MODERATE, np.cosh, mpmath.cosh, FLOATING_AND_COMPLEX),
    ("tanh", D.Domain(-1.5, 1.5, imag=(-1.0, 1.0), name="tanh"), np.tanh, mpmath.tanh,
     FLOATING_AND_COMPLEX),
    ("sigmoid", D.MODERATE, lambda x: 1 / (1 + np.exp(-x)), lambda x: 1 / (1 + mpmath.exp(-x)),
     FLOATING_AND_COMPLEX),
    ("asin", D.OPEN_UNIT, np.arcsin, mpmath.asin, FLOATING_AND_COMPLEX),
    ("acos", D.OPEN_UNIT, np.arccos, mpmath.acos, FLOATING_AND_COMPLEX),
    ("atan", D.ATAN, np.arctan, mpmath.atan, FLOATING_AND_COMPLEX),
    ("erf", D.REAL, _np_erf, mpmath.erf, FLOATING),
    ("erfc", D.REAL, _np_erfc, mpmath.erfc, FLOATING),
    ("neg", D.REAL, np.negative, lambda x: -x, FLOATING_AND_COMPLEX),
)

_SPECIAL = {"sqrt": _special((0.0, 1.0, 4.0), "sqrt'(0) = 1/(2 sqrt(0)) = inf")}

for _name, _domain, _ref, _mp, _dtypes in _TABLE:
    register(OpInfo(_name, getattr(E, _name), family=FAMILY, torch_name=_name, ref=_ref,
                    mpmath_ref=mp_elementwise(_mp), dtypes=_dtypes, sample_func=unary(_domain),
                    special_func=_SPECIAL.get(_name)))

register(OpInfo(
    "relu", E.relu, family=FAMILY, torch_name="relu", ref=lambda x: np.maximum(x, 0),
    mpmath_ref=mp_elementwise(lambda x: x if x > 0 else x * 0), dtypes=FLOATING,
    sample_func=unary(D.NONZERO),
    special_func=_special(_KINK, "relu'(0) = 0 (the minimum-norm subgradient)")))
register(OpInfo(
    "abs", E.abs, family=FAMILY, torch_name="abs", ref=np.abs,
    mpmath_ref=mp_elementwise(abs), dtypes=FLOATING_AND_COMPLEX, sample_func=unary(D.NONZERO),
    special_func=_special(_KINK, "abs'(0) = 0 (the minimum-norm subgradient)")))
register(OpInfo(
    "sgn", E.sgn, family=FAMILY, torch_name="sgn", ref=_np_sgn, mpmath_ref=mp_elementwise(_mp_sgn),
    dtypes=FLOATING_AND_COMPLEX, sample_func=unary(D.NONZERO),
    special_func=_special(_KINK, "sgn has gradient 0 at 0"),
    # on real numbers sgn's derivative is a constant zero with no graph (as torch's):
    # a second derivative to check only on complex ones
    supports_gradgrad=COMPLEX, supports_fwgrad_bwgrad=COMPLEX))
register(OpInfo(
    "sign", E.sign, family=FAMILY, torch_name="sign", ref=np.sign,
    mpmath_ref=mp_elementwise(mpmath.sign), dtypes=FLOATING, sample_func=unary(D.NONZERO),
    special_func=_special(_KINK, "sign has gradient 0 everywhere, 0 included"),
    supports_gradgrad=False, supports_fwgrad_bwgrad=False))     # a zero with no graph
