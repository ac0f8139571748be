"""Binary elementwise ops with broadcasting (the engine sums gradients back
to each input's shape) and the comparisons, which are not differentiable."""
from __future__ import annotations

import cmath
import math

import numpy as np

from .. import dtypes
from ..autograd.tangents import absent
from ..batching.rules import elementwise, pad_batched
from .dispatch import call, is_number
from .opdef import OPS, defelementwise, defop, deflinear, no_bool, no_complex

B = dict(promote=("self", "other"), inplace=True)


def _conj(x):
    return x.conjugate() if isinstance(x, complex) else x


def _times(grad, alpha, copy=False):
    # torch's maybe_multiply: alpha 1 multiplies nothing (a complex gradient times
    # 1 would carry a NaN imaginary part into the real part, NaN * 0). ``copy``: the
    # gradient would reach both inputs as one tensor, whose .grad then share memory
    # (torch's aliasing, docs/differences.md: refengine's do not)
    if alpha != 1:
        return grad * _conj(alpha)
    return grad.clone() if copy else grad


deflinear("add", lambda self, other, alpha=1: self + alpha * other if alpha != 1 else self + other,
          vjp={"self": lambda grad: grad, "other": lambda grad, alpha: _times(grad, alpha, copy=True)},
          batch=elementwise, **B)
_NO_BOOL_SUB = no_bool("Subtraction, the `-` operator, with a bool tensor is not supported. If "
                       "you are trying to invert a mask, use the `~` or `logical_not()` "
                       "operator instead.")
deflinear("sub", lambda self, other, alpha=1: self - alpha * other if alpha != 1 else self - other,
          vjp={"self": lambda grad: grad, "other": lambda grad, alpha: _times(-grad, alpha)},
          refuse=_NO_BOOL_SUB, batch=elementwise, **B)
# ``2 - x``: the number is ``other`` here, as in PyTorch's rsub.
deflinear("rsub", lambda self, other, alpha=1: other - alpha * self,
          vjp={"self": lambda grad, alpha: _times(-grad, alpha), "other": lambda grad: grad},
          promote=("self", "other"), method=None, node="RsubBackward1", refuse=_NO_BOOL_SUB,
          scalar_inputs=("other",),
          batch=elementwise)
def _annex_g(x, y):
    """Complex products where NumPy gives nan+nanj but an operand is infinite:
    the C99 Annex G recovery PyTorch's complex arithmetic applies (inf * finite
    is infinite)."""
    a, b, c, d = x.real.copy(), x.imag.copy(), y.real.copy(), y.imag.copy()
    for p, q, u, v in ((a, b, c, d), (c, d, a, b)):
        big = np.isinf(p) | np.isinf(q)
        p[big] = np.copysign(np.isinf(p[big]).astype(float), p[big])
        q[big] = np.copysign(np.isinf(q[big]).astype(float), q[big])
        u[big & np.isnan(u)] = np.copysign(0.0, u[big & np.isnan(u)])
        v[big & np.isnan(v)] = np.copysign(0.0, v[big & np.isnan(v)])
    out = np.empty(a.shape, complex)
    out.real = np.inf * (a * c - b * d)   # set the parts: 1j * inf would make a nan
    out.imag = np.inf * (a * d + b * c)
    return out


def _mul(self, other):
    out = np.multiply(self, other)
    if out.dtype.kind == "c":
        lost = np.isnan(out.real) & np.isnan(out.imag)
        if lost.any():
            x, y = np.broadcast_arrays(np.asarray(self, out.dtype), np.asarray(other, out.dtype))
            out = np.array(out, copy=True)
            out[lost] = _annex_g(x[lost], y[lost]).astype(out.dtype)
    return out


defelementwise("mul", _mul,
               {"self": lambda other: other, "other": lambda self: self}, **B)
def _div_jvp(self_t, other_t, other, result):
    # torch's (self_t - other_t * result) / other: at other = 0 that is +-inf
    # where the sum of the two quotients would be inf - inf = NaN
    num = self_t if absent(other_t) else (
        -(other_t * result) if absent(self_t) else self_t - other_t * result)
    return num / other.to(result.dtype)


defelementwise("div", lambda self, other: np.true_divide(self, other),
               # the gradient's dtype is the result's (an int other: no float32);
               # backward saves other only, as PyTorch does (not the result)
               {"self": lambda grad, other: other.to(grad.dtype).reciprocal(),
                # -(self / other) / other as torch: other * other overflows for
                # |other| past 1e154 where the quotients do not (a NaN gradient)
                "other": lambda self, other: -(self / other) / other},
               jvp=_div_jvp, to_float=True, **B)


def _atan2_recip(self, other):
    # as in PyTorch, 1/(x^2 + y^2) is taken as 0 where it overflows: the
    # gradient at (0, 0) is 0, not NaN
    recip = (self * self + other * other).reciprocal()
    return recip.masked_fill(recip.isinf(), 0)


defelementwise("atan2", lambda self, other: np.arctan2(self, other),
               {"self": lambda self, other: other * _atan2_recip(self, other),
                "other": lambda self, other: -self * _atan2_recip(self, other)},
               # forward mode keeps the plain quotient (NaN at the origin), as in PyTorch
               tangent_derivatives={"self": lambda self, other: other / (self * self + other * other),
                                    "other": lambda self, other: -self / (self * self + other * other)},
               to_float=True, refuse=no_complex("atan2"), **B)


def _zero_number(exponent) -> bool:
    """A number exponent 0: PyTorch's derivative is then a constant zero with no graph."""
    return is_number(exponent) and exponent.item() == 0


def _pow_self(grad, self, exponent):
    # d/dself x**p = p x**(p-1); where p == 0 the derivative is 0 (also at x = 0).
    if _zero_number(exponent):
        from ..creation import zeros_like
        return zeros_like(self)
    # 0 where p == 0, as torch's where(exponent == 0, 0, ...), even for a NaN or inf
    # gradient or x = 0; masked only where not finite, for its derivative in p, x**-1,
    # flows there (torch's where cuts it: its double backward is 0 at p == 0)
    return _zero_at_zero_power(grad * (exponent * self.pow(exponent - 1)).conj(), exponent)


def _zero_at_zero_power(product, exponent):
    """``product`` (p x**(p-1) times a gradient or tangent), 0 where p == 0: it is
    0 there already wherever finite (0 times a finite number)."""
    return product.masked_fill((exponent == 0) & ~product.isfinite(), 0)


def _exponent_factor(self, exponent, result):
    """d/dp x**p = x**p log x, taken as 0 at x = 0 for a real p >= 0 (by
    continuity); at x = 0 otherwise it is 0 * -inf = NaN, as in torch."""
    at_zero = (self == 0) & _real_nonnegative(exponent)
    return (result * _log_base(self, result, at_zero)).masked_fill(at_zero, 0)


def _log_base(self, result, at_zero):
    """log x for d/dp x**p. A Python number's log is taken in float64 (then cast
    to the result's dtype), as PyTorch takes the log of a Scalar base: for
    ``2 ** x`` in float32 that is float32(log 2), not log of float32 2. A real
    tensor base of a complex power is promoted first (log of -2 is log 2 + i pi)."""
    if not is_number(self):
        if result.is_complex() and not self.is_complex():
            self = self.to(result.dtype)
        # log 0 = -inf is kept out of the graph where the factor is set to 0
        return call(OPS["where"], at_zero, 1.0, self).log()
    v = self.item()
    if isinstance(v, complex):
        return cmath.log(v) if v != 0 else complex(-math.inf)
    return math.log(v) if v > 0 else (-math.inf if v == 0 else math.nan)


def _real_nonnegative(exponent):
    # torch's mask of d/dp x**p at x = 0: a complex exponent must be real too
    if exponent.is_complex():
        return (exponent.imag == 0) & (exponent.real >= 0)
    return exponent >= 0


def _pow_exponent(grad, self, exponent, result):
    # d/dp x**p = x**p log x; at x = 0 with p >= 0 it is taken as 0 (by continuity).
    d = _exponent_factor(self, exponent, result)
    return grad * d.conj()


def _pow_variant(raw: dict) -> str:
    if is_number(raw["exponent"]):
        return "PowBackward0"
    return "PowBackward2" if is_number(raw["self"]) else "PowBackward1"


def _pow_jvp(self_t, exponent_t, self, exponent, result):
    if _zero_number(exponent):
        from ..creation import zeros_like
        return zeros_like(result)
    # an input without a tangent contributes exactly zero (x**2 at x < 0 must
    # not pick up 0 * log(x) = nan); a zero tangent, sign(x)'s, does not
    out = None
    if not absent(self_t):
        out = _zero_at_zero_power(self_t * (exponent * self.pow(exponent - 1)), exponent)
    if absent(exponent_t):
        return out
    dexp = _exponent_factor(self, exponent, result)
    return exponent_t * dexp if out is None else out + exponent_t * dexp


def _check_pow(tensors: dict) -> None:
    base, exp = tensors["self"], tensors["exponent"]
    if base.dtype.name == "bool" and exp.dtype.name == "bool" and not exp._wrapped_number:
        raise RuntimeError('"pow" is not implemented for \'Bool\'')
    if base.dtype._category == 1 and exp.dtype._category == 1 and bool((exp._data < 0).any()):
        raise RuntimeError("Integers to negative integer powers are not allowed.")


# torch's kernels for a Scalar exponent of a floating or complex tensor: exact
# products and roots where NumPy's pow rounds otherwise or takes another sign
# of zero ((-0.0) ** -0.5 is 1 / sqrt(-0.0) = -inf in torch, +inf in C's pow)
_SCALAR_POWERS = {
    1.0: np.copy, 0.5: np.sqrt, -0.5: lambda x: 1 / np.sqrt(x), -1.0: lambda x: 1 / x,
    2.0: lambda x: x * x, 3.0: lambda x: x * x * x, -2.0: lambda x: 1 / (x * x),
}


def _pow_forward(self, exponent):
    # a real number promoted to a complex tensor's dtype is still that number
    if (isinstance(exponent, np.number) and isinstance(self, np.ndarray)
            and self.dtype.kind in "fc" and exponent.imag == 0):
        special = _SCALAR_POWERS.get(float(exponent.real))
        if special is not None:
            return special(self).astype(self.dtype, copy=False)
    return np.power(self, exponent)


defop("pow", _pow_forward,
      vjp={"self": _pow_self, "exponent": _pow_exponent}, jvp=_pow_jvp,
      inputs=("self", "exponent"), promote=("self", "exponent"), variant=_pow_variant,
      scalar_inputs=("self", "exponent"),
      refuse=_check_pow, inplace=True, batch=elementwise)


def _pick_grad(grad, self, other, loses):
    # PyTorch's rule: half the gradient on a tie, none to the operand that
    # loses, all of it otherwise (with a NaN both get it; an inf gradient
    # masked out is 0, not inf * 0)
    return call(OPS["where"], self != other, grad, grad / 2).masked_fill(loses, 0)


def _tie_share(self, other):
    # where self == other the gradient is shared equally (PyTorch's rule)
    return (self > other).to(self.dtype) + (self == other).to(self.dtype) * 0.5


defop("maximum", lambda self, other: np.maximum(self, other),
      vjp={"self": lambda grad, self, other: _pick_grad(grad, self, other, self < other),
           "other": lambda grad, self, other: _pick_grad(grad, self, other, self > other)},
      jvp=lambda self_t, other_t, self, other: other_t + _tie_share(self, other) * (self_t - other_t),
      promote=("self", "other"), refuse=no_complex("maximum"), batch=elementwise)
defop("minimum", lambda self, other: np.minimum(self, other),
      vjp={"self": lambda grad, self, other: _pick_grad(grad, self, other, self > other),
           "other": lambda grad, self, other: _pick_grad(grad, self, other, self < other)},
      jvp=lambda self_t, other_t, self, other: other_t + _tie_share(other, self) * (self_t - other_t),
      promote=("self", "other"), refuse=no_complex("minimum"), batch=elementwise)
deflinear("where", lambda condition, self, other: np.where(condition, self, other),
          # torch's where(condition, grad, 0): laid out as the condition (layout.py)
          vjp={"self": lambda grad, condition: call(OPS["where"], condition, grad, 0),
               "other": lambda grad, condition: call(OPS["where"], condition, 0, grad)},
          inputs=("condition", "self", "other"), nondiff=("condition",),
          promote=("self", "other"), method="where", batch=elementwise)


def _masked_fill_batch(c):
    # value's vjp sums over everything, as value is 0-d: with one value per
    # example the physical call would add up all the examples' gradients, so
    # a batched value goes through where(), whose vjp keeps them apart
    if "value" not in c.batched:
        return elementwise(c)
    args = {**c.env, **pad_batched(c)}
    filled = call(OPS["where"], args["mask"], args["value"], args["self"])
    if filled.dtype != args["self"].dtype:
        filled = filled.to(args["self"].dtype)
    return c.run(OPS["copy"], src=filled) if c.inplace else filled


deflinear("masked_fill", lambda self, mask, value: np.where(mask, value, self).astype(self.dtype),
          vjp={"self": lambda grad, mask: grad.masked_fill(mask, 0),
               "value": lambda grad, mask: grad.masked_fill(~mask, 0).sum()},
          inputs=("self", "mask", "value"), nondiff=("mask",), inplace=True, scalar_inputs=("value",),
          batch=_masked_fill_batch)


def _compare(name, fn, ordered=True):
    defop(name, fn, vjp=None, promote=("self", "other"), result_dtype=lambda d: dtypes.bool_,
          refuse=no_complex(name) if ordered else None, batch=elementwise)


_compare("eq", lambda self, other: np.equal(self, other), ordered=False)
_compare("ne", lambda self, other: np.not_equal(self, other), ordered=False)
_compare("lt", lambda self, other: np.less(self, other))
_compare("le", lambda self, other: np.less_equal(self, other))
_compare("gt", lambda self, other: np.greater(self, other))
_compare("ge", lambda self, other: np.greater_equal(self, other))
defop("logical_and", lambda self, other: np.logical_and(self, other), vjp=None, batch=elementwise)
defop("logical_or", lambda self, other: np.logical_or(self, other), vjp=None, batch=elementwise)
defop("logical_not", lambda self: np.logical_not(self), vjp=None, batch=elementwise)
defop("bitwise_and", lambda self, other: np.bitwise_and(self, other), vjp=None,
      promote=("self", "other"), batch=elementwise)
defop("bitwise_or", lambda self, other: np.bitwise_or(self, other), vjp=None,
      promote=("self", "other"), batch=elementwise)
defop("bitwise_not", lambda self: np.invert(self), vjp=None, batch=elementwise)
defop("isnan", lambda self: np.isnan(self), vjp=None, batch=elementwise)
defop("isinf", lambda self: np.isinf(self), vjp=None, batch=elementwise)
defop("isfinite", lambda self: np.isfinite(self), vjp=None, batch=elementwise)
