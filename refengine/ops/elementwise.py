"""Unary elementwise ops. Holomorphic ones are given by their derivative;
the rest (abs, sgn, relu, ...) have both rules written out."""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from .opdef import defelementwise, defop, deflinear, no_bool

F = dict(promote=("self",), to_float=True, inplace=True)   # float-valued ops on any input
_erf = np.frompyfunc(math.erf, 1, 1)
_erfc = np.frompyfunc(math.erfc, 1, 1)


def _real_only(fn):
    def forward(self):
        if np.iscomplexobj(self):
            raise RuntimeError(f"{fn.__name__} is not implemented for complex tensors")
        return fn(self)
    forward.__name__ = fn.__name__
    return forward


def _np_erf(self):
    return np.asarray(_erf(self), dtype=self.dtype)


def _np_erfc(self):
    return np.asarray(_erfc(self), dtype=self.dtype)


_np_erf.__name__, _np_erfc.__name__ = "erf", "erfc"

defelementwise("exp", lambda self: np.exp(self), lambda result: result, **F)
defelementwise("expm1", lambda self: np.expm1(self), lambda result: result + 1, **F)
defelementwise("log", lambda self: np.log(self), lambda self: self.reciprocal(), **F)
defelementwise("log1p", lambda self: np.log1p(self), lambda self: (self + 1).reciprocal(),
               node="Log1PBackward0", **F)
defelementwise("log2", lambda self: np.log2(self), lambda self: (self * math.log(2)).reciprocal(), **F)
defelementwise("log10", lambda self: np.log10(self), lambda self: (self * math.log(10)).reciprocal(), **F)
defelementwise("sqrt", lambda self: np.sqrt(self), lambda result: (result * 2).reciprocal(), **F)
defelementwise("rsqrt", lambda self: 1 / np.sqrt(self), lambda result: result.pow(3) * -0.5, **F)
defelementwise("reciprocal", lambda self: 1 / self, lambda result: -result * result, **F)
defelementwise("sin", lambda self: np.sin(self), lambda self: self.cos(), **F)
defelementwise("cos", lambda self: np.cos(self), lambda self: -self.sin(), **F)
defelementwise("tan", lambda self: np.tan(self), lambda result: result * result + 1, **F)
defelementwise("sinh", lambda self: np.sinh(self), lambda self: self.cosh(), **F)
defelementwise("cosh", lambda self: np.cosh(self), lambda self: self.sinh(), **F)
defelementwise("tanh", lambda self: np.tanh(self), lambda result: 1 - result * result, **F)
defelementwise("sigmoid", lambda self: 1 / (1 + np.exp(-self)),
               lambda result: result * (1 - result), **F)
defelementwise("asin", lambda self: np.arcsin(self), lambda self: (1 - self * self).rsqrt(), **F)
defelementwise("acos", lambda self: np.arccos(self), lambda self: -(1 - self * self).rsqrt(), **F)
defelementwise("atan", lambda self: np.arctan(self), lambda self: (1 + self * self).reciprocal(), **F)
defelementwise("erf", _real_only(_np_erf),
               lambda self: (-self * self).exp() * (2 / math.sqrt(math.pi)), **F)
defelementwise("erfc", _real_only(_np_erfc),
               lambda self: (-self * self).exp() * (-2 / math.sqrt(math.pi)), **F)
# relu is convex: at 0 the minimum-norm subgradient is 0 (seed: rule 2).
defelementwise("relu", _real_only(lambda self: np.maximum(self, 0)),
               lambda result: (result > 0).to(result.dtype), promote=("self",), inplace=True)
deflinear("neg", lambda self: -self, vjp={"self": lambda grad: -grad},
          promote=("self",), inplace=True,
          refuse=no_bool("Negation, the `-` operator, on a bool tensor is not supported. If you "
                         "are trying to invert a mask, use the `~` or `logical_not()` operator "
                         "instead."))


def _sgn(self):
    if np.iscomplexobj(self):
        mag = np.abs(self)
        return np.where(mag == 0, 0, self / np.where(mag == 0, 1, mag)).astype(self.dtype)
    return np.sign(self)


# abs is not holomorphic: d|z| = Re(conj(sgn z) dz); its vjp is grad * sgn(z).
defop("abs", lambda self: np.abs(self),
      vjp={"self": lambda grad, self: grad * self.sgn()},
      jvp=lambda self_t, self: (self_t * self.sgn().conj()).real if self.is_complex()
      else self_t * self.sgn(),
      promote=("self",), result_dtype=dtypes.to_real, inplace=True)
# sgn(z) = z/|z| is not holomorphic; its derivative is zero on the reals
# and (dz - sgn(z) Re(conj(sgn z) dz)) / |z| on the complex plane.
defop("sgn", _sgn,
      vjp={"self": lambda grad, self, result: (
          ((grad - result * (grad * result.conj()).real) / self.abs()).masked_fill(self == 0, 0)
          if self.is_complex() else grad * 0)},
      jvp=lambda self_t, self, result: (
          ((self_t - result * (self_t * result.conj()).real) / self.abs()).masked_fill(self == 0, 0)
          if self.is_complex() else self_t * 0),
      promote=("self",), inplace=True)
defop("sign", _real_only(np.sign), vjp={"self": lambda grad: grad * 0},
      jvp=lambda self_t: self_t * 0, promote=("self",), inplace=True)
