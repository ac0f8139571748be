"""Unary elementwise ops. Holomorphic ones are given by their derivative;
the rest (abs, sgn, relu, ...) have both rules written out."""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from ..batching.rules import elementwise
from ..autograd.tangents import absent
from ..grad_mode import is_recording
from .dispatch import call
from .opdef import OPS, defelementwise, deflinear, defop, no_bool, no_complex_kernel, public

F = dict(promote=("self",), to_float=True, inplace=True)   # float-valued ops on any input
_erf = np.frompyfunc(math.erf, 1, 1)
_erfc = np.frompyfunc(math.erfc, 1, 1)


def _no_derivative(t):
    """A zero derivative as PyTorch gives it: zeros, with no graph (not ``t * 0``,
    which is NaN where ``t`` is infinite and records a node)."""
    from ..creation import zeros_like
    return zeros_like(t)


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
# relu's gradient is PyTorch's threshold_backward: the gradient where the result
# is positive, 0 elsewhere (also for an inf or NaN gradient there). It is an op
# of its own, as in torch, so that a double backward records its edge to the
# result (a zero gradient: a hook behind relu is called with zeros, and the
# gradient of a gradient through relu requires grad)
defop("threshold_backward",
      lambda grad_output, self, threshold: np.where(self <= threshold, 0, grad_output).astype(
          grad_output.dtype, copy=False),
      vjp={"grad_output": lambda grad, self, threshold:
           call(OPS["threshold_backward"], grad, self, threshold),
           "self": lambda grad: _no_derivative(grad)},
      jvp=lambda grad_output_t, self, threshold: None if absent(grad_output_t) else
      call(OPS["threshold_backward"], grad_output_t, self, threshold),
      inputs=("grad_output", "self"), promote=("grad_output", "self"),
      node="ThresholdBackwardBackward0", method=None, function=False, batch=elementwise)
defop("relu", _real_only(lambda self: np.maximum(self, 0)),
      vjp={"self": lambda grad, result: call(OPS["threshold_backward"], grad, result, 0)},
      jvp=lambda self_t, result: self_t.masked_fill(result <= 0, 0),
      promote=("self",), inplace=True, batch=elementwise)
deflinear("neg", lambda self: -self, vjp={"self": lambda grad: -grad},
          promote=("self",), inplace=True, batch=elementwise,
          refuse=no_bool("Negation, the `-` operator, on a bool tensor is not supported. If you "
                         "are trying to invert a mask, use the `~` or `logical_not()` operator "
                         "instead."))


def _sgn(self):
    if np.iscomplexobj(self):
        mag = np.abs(self)
        return np.where(mag == 0, 0, self / np.where(mag == 0, 1, mag)).astype(self.dtype)
    return _sign(self)


# abs is not holomorphic: d|z| = Re(conj(sgn z) dz); its vjp is grad * sgn(z).
defop("abs", lambda self: np.abs(self),
      vjp={"self": lambda grad, self: grad * self.sgn()},
      jvp=lambda self_t, self: (self_t * self.sgn().conj()).real if self.is_complex()
      else self_t * self.sgn(),
      promote=("self",), result_dtype=dtypes.to_real, inplace=True, batch=elementwise)
# sgn(z) = z/|z| is not holomorphic; its derivative is zero on the reals
# and (dz - sgn(z) Re(conj(sgn z) dz)) / |z| on the complex plane.
defop("sgn", _sgn,
      vjp={"self": lambda grad, self, result: (
          ((grad - result * (grad * result.conj()).real) / self.abs()).masked_fill(self == 0, 0)
          if self.is_complex() else _no_derivative(grad))},
      jvp=lambda self_t, self, result: (
          ((self_t - result * (self_t * result.conj()).real) / self.abs()).masked_fill(self == 0, 0)
          if self.is_complex() else _no_derivative(self_t)),
      promote=("self",), inplace=True, batch=elementwise)
def _sign(self):
    # PyTorch's sign is (0 < x) - (x < 0): NaN has sign 0
    return np.where(np.isnan(self), 0, np.sign(self)).astype(self.dtype) \
        if self.dtype.kind == "f" else np.sign(self)


_sign.__name__ = "sign"
defop("sign", _real_only(_sign), vjp={"self": lambda grad: _no_derivative(grad)},
      jvp=lambda self_t: _no_derivative(self_t), promote=("self",), inplace=True, batch=elementwise)

# ----- more elementwise ops: squares, inverse hyperbolics, rounding, clamp, nan_to_num
defelementwise("square", lambda self: self * self, lambda self: self * 2,
               promote=("self",), inplace=True, node="PowBackward0")
defelementwise("asinh", lambda self: np.arcsinh(self), lambda self: (self * self + 1).rsqrt(), **F)
# acosh' = 1/(sqrt(z-1) sqrt(z+1)): equal to (z^2-1)^(-1/2) on the reals, and
# right on the whole principal branch for complex z (where the latter flips sign).
# Real inputs take PyTorch's (x^2-1)^(-1/2): below -1, where acosh is NaN, its
# derivative is then a number, as in torch.
defelementwise("acosh", lambda self: np.arccosh(self),
               lambda self: ((self - 1).sqrt() * (self + 1).sqrt()).reciprocal()
               if self.is_complex() else (self * self - 1).rsqrt(), **F)
defelementwise("atanh", lambda self: np.arctanh(self), lambda self: (1 - self * self).reciprocal(),
               **F)


def _piecewise_constant(name, fn, **options):
    """A real op that is constant between jumps: its derivative is 0 everywhere."""
    defop(name, _real_only(fn), vjp={"self": lambda grad: _no_derivative(grad)},
          jvp=lambda self_t: _no_derivative(self_t), promote=("self",), inplace=True, batch=elementwise,
          **options)


_piecewise_constant("floor", lambda self: np.floor(self) if self.dtype.kind == "f" else self.copy())
_piecewise_constant("ceil", lambda self: np.ceil(self) if self.dtype.kind == "f" else self.copy())
_piecewise_constant("trunc", lambda self: np.trunc(self) if self.dtype.kind == "f" else self.copy())


def _round(self, decimals=0):
    """Round half to even, to ``decimals`` decimal places."""
    if np.iscomplexobj(self):
        raise RuntimeError("round is not implemented for complex tensors")
    return np.round(self, decimals) if self.dtype.kind == "f" else self.copy()


defop("round", _round, vjp={"self": lambda grad: _no_derivative(grad)},
      jvp=lambda self_t: _no_derivative(self_t),
      promote=("self",), inplace=True, batch=elementwise,
      variant=lambda raw: "RoundBackward0" if not raw.get("decimals") else "RoundBackward1")
# frac(x) = x - trunc(x): slope 1 between the jumps.
defop("frac", _real_only(lambda self: self - np.trunc(self)), vjp={"self": lambda grad: grad},
      jvp=lambda self_t: self_t, promote=("self",), inplace=True, batch=elementwise)


def _nan_to_num(self, nan=0.0, posinf=None, neginf=None):
    return np.nan_to_num(self, nan=nan, posinf=posinf, neginf=neginf)


def _finite(self):
    if self.is_complex():
        raise RuntimeError("nan_to_num does not support automatic differentiation for outputs "
                           "with complex dtype.")
    return self.isfinite().to(self.dtype)


def _no_complex_autograd(tensors: dict) -> None:
    """PyTorch refuses a complex input that would be recorded, in the forward."""
    for t in tensors.values():
        if not isinstance(t, list) and t.dtype.is_complex and t.requires_grad and \
                is_recording():
            _finite(t)


# Replaced entries are constants: the gradient passes only where self is finite.
# (Complex input is refused when differentiated, as PyTorch refuses it: recorded in
# the forward, and in a jvp)
defop("nan_to_num", _nan_to_num,
      vjp={"self": lambda grad, self: grad * _finite(self)},
      jvp=lambda self_t, self: self_t * _finite(self),
      promote=("self",), inplace=True, batch=elementwise, refuse=_no_complex_autograd)


def _clamp(self, min=None, max=None):
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    out = self if min is None else np.maximum(self, min)
    return out if max is None else np.minimum(out, max)


def _inside(self, min, max):
    """Where the clamp passes self through: min <= self <= max (bounds included)."""
    mask = None
    for bound in ((self >= min) if min is not None else None,
                  (self <= max) if max is not None else None):
        if bound is not None:
            mask = bound if mask is None else mask & bound
    return mask


def _only(grad, mask):
    # where, not a product: an inf or NaN gradient outside the mask gives 0
    return grad.masked_fill(~mask, 0)


def _clamp_jvp(self_t, min_t, max_t, self, min, max):
    out = _only(self_t, _inside(self, min, max))
    if min is not None:
        out = out + _clamp_min_grad(min_t, self, min, max)
    return out + _clamp_max_grad(max_t, self, min, max) if max is not None else out


def _clamp_min_grad(grad, self, min, max):
    hit = self < min
    return _only(grad, hit if max is None else hit & (min <= max))


def _clamp_max_grad(grad, self, min, max):
    hit = self > max
    return _only(grad, hit if min is None else hit | (min > max))


# clamp = min(max(self, min), max). At a bound the gradient goes to self
# (PyTorch: min <= self <= max); where min > max the output is max.
defop("clamp", _clamp, inputs=("self", "min", "max"), promote=("self", "min", "max"),
      refuse=no_complex_kernel(None, "clamp is not supported for complex types"),
      vjp={"self": lambda grad, self, min, max: _only(grad, _inside(self, min, max)),
           "min": _clamp_min_grad, "max": _clamp_max_grad},
      jvp=_clamp_jvp, inplace=True, batch=elementwise, scalar_inputs=("min", "max"),
      variant=lambda raw: "ClampBackward0" if any(hasattr(raw.get(k), "_data")
                                                 for k in ("min", "max")) else "ClampBackward1")


@public()
def clip(input, min=None, max=None):
    """Alias of ``clamp``."""
    return call(OPS["clamp"], input, min, max)


@public("clip_", function=False)
def clip_(self, min=None, max=None):
    """In-place ``clip``."""
    return self.clamp_(min, max)
