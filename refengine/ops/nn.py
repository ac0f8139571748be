"""Neural-network ops (``refengine.nn.functional``): activations, softmax and
log_softmax, the losses with a rule of their own (mse_loss, nll_loss),
layer_norm and constant padding. Convolution is in ``conv.py``; the
composites (linear, cross_entropy, dropout, reflect/replicate padding) are
in ``refengine/nn/functional.py``.

At the kinks the derivative is PyTorch's: leaky_relu and elu take the
left branch at 0, hardtanh passes no gradient at its bounds, softplus is
the identity above ``threshold``.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from .. import creation
from ..batching.batched import NotBatchable
from ..batching.rules import along_dim, pad_batched
from .dispatch import call
from .layout import c_order
from .elementwise import _np_erf
from .opdef import OPS, defelementwise, deflinear, defop, no_complex_kernel

N = dict(promote=("self",), method=None, function=False, inplace=True)
_SQRT_2PI = math.sqrt(2 * math.pi)
_K = math.sqrt(2 / math.pi)   # the tanh approximation of gelu: tanh(K (x + 0.044715 x^3))


def _real_only(fn):
    @functools.wraps(fn)
    def forward(*args, **kwargs):
        if np.iscomplexobj(args[0] if args else kwargs["self"]):
            raise RuntimeError(f"{fn.__name__} is not implemented for complex tensors")
        return fn(*args, **kwargs)
    return forward


def _mask(cond, like):
    return cond.to(like.dtype)


# ----- activations ---------------------------------------------------------------
def _gelu(self, approximate="none"):
    if approximate == "tanh":
        return 0.5 * self * (1 + np.tanh(_K * (self + 0.044715 * self ** 3)))
    if approximate != "none":
        raise RuntimeError("approximate argument must be either none or tanh.")
    return 0.5 * self * (1 + _np_erf(self / math.sqrt(2)))


def _gelu_derivative(self, approximate):
    if approximate == "tanh":
        t = ((self + 0.044715 * self * self * self) * _K).tanh()
        return 0.5 * (1 + t) + 0.5 * self * (1 - t * t) * _K * (1 + 3 * 0.044715 * self * self)
    cdf = 0.5 * (1 + (self * (1 / math.sqrt(2))).erf())
    return cdf + self * (-0.5 * self * self).exp() / _SQRT_2PI


defelementwise("gelu", _real_only(_gelu), _gelu_derivative, **N)
defelementwise("silu", _real_only(lambda self: self / (1 + np.exp(-self))),
               lambda self: self.sigmoid() * (1 + self * (1 - self.sigmoid())), **N)


def _softplus(self, beta=1.0, threshold=20.0):
    z = self * beta
    return np.where(z > threshold, self, np.logaddexp(0, z) / beta).astype(self.dtype)


defelementwise("softplus", _real_only(_softplus),
               lambda self, beta, threshold: (self * beta).sigmoid().masked_fill(
                   self * beta > threshold, 1), **N)
defelementwise("elu", _real_only(lambda self, alpha=1.0: np.where(
    self > 0, self, alpha * np.expm1(np.minimum(self, 0))).astype(self.dtype)),
    # exp of min(x, 0): exp(x) overflows for large x > 0, and 0 * inf is NaN (torch: 1)
    lambda self, alpha: _mask(self > 0, self)
    + _mask(self <= 0, self) * self.clamp(max=0).exp() * alpha, **N)
defelementwise("leaky_relu", _real_only(lambda self, negative_slope=0.01: np.where(
    self > 0, self, self * negative_slope).astype(self.dtype)),
    lambda self, negative_slope: _mask(self > 0, self) + _mask(self <= 0, self) * negative_slope,
    **N)
defelementwise("hardtanh", _real_only(lambda self, min_val=-1.0, max_val=1.0: np.clip(
    self, min_val, max_val).astype(self.dtype)),
    lambda self, min_val, max_val: _mask((self > min_val) & (self < max_val), self), **N)


# ----- softmax and log_softmax: vjp y (g - sum(g y)), g - exp(y) sum(g) ----------
def _softmax(self, dim, dtype=None):
    x = self.astype(dtype.np) if dtype is not None else self
    e = np.exp(x - np.max(x, axis=dim, keepdims=True))
    return e / np.sum(e, axis=dim, keepdims=True)


def _log_softmax(self, dim, dtype=None):
    x = self.astype(dtype.np) if dtype is not None else self
    m = np.max(x, axis=dim, keepdims=True)
    return x - m - np.log(np.sum(np.exp(x - m), axis=dim, keepdims=True))


S = dict(promote=("self",), to_float=True, batch=along_dim(), layout=c_order)
# (torch has no complex kernel: its message names the last dimension's, whatever dim)
defop("softmax", _softmax,
      vjp={"self": lambda grad, result, dim: result * (grad - (grad * result).sum(dim, keepdim=True))},
      jvp=lambda self_t, result, dim: result * (self_t - (self_t * result).sum(dim, keepdim=True)),
      refuse=no_complex_kernel("softmax_lastdim_kernel_impl"), **S)
defop("log_softmax", _log_softmax,
      vjp={"self": lambda grad, result, dim: grad - result.exp() * grad.sum(dim, keepdim=True)},
      jvp=lambda self_t, result, dim: self_t - (self_t * result.exp()).sum(dim, keepdim=True),
      refuse=no_complex_kernel("log_softmax_lastdim_kernel_impl"), **S)


# ----- losses ----------------------------------------------------------------------
_REDUCTIONS = ("none", "mean", "sum")


def _reduce(x, reduction):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return x if reduction == "none" else x.mean() if reduction == "mean" else x.sum()


def _unreduce(grad, shape, reduction):
    """The gradient of ``_reduce`` at an input of ``shape``."""
    if reduction == "none":
        return grad
    g = grad.expand(shape)
    return g / max(int(np.prod(shape)), 1) if reduction == "mean" else g


def _mse(self, target, reduction="mean"):
    return _reduce((self - target) ** 2, reduction)


def _mse_grad(grad, self, target, reduction):
    diff = self - target
    return _unreduce(grad, tuple(diff.shape), reduction) * diff * 2


def _mse_batch(c):
    """mse_loss batched: the elementwise losses (reduction='none') of the
    physical arguments, reduced over each example's dims, not the batch's."""
    reduction = c.env["reduction"]
    if reduction not in _REDUCTIONS:
        raise NotBatchable("an unknown reduction: the loop raises the op's error")
    losses = c.run(reduction="none", **pad_batched(c, ("self", "target")))
    if reduction == "none" or losses.ndim == 1:
        return losses
    dims = tuple(range(1, losses.ndim))
    return losses.mean(dim=dims) if reduction == "mean" else losses.sum(dim=dims)


defop("mse_loss", _mse, inputs=("self", "target"), promote=("self", "target"),
      refuse=no_complex_kernel("mse_cpu"),
      vjp={"self": _mse_grad,
           "target": lambda grad, self, target, reduction: -_mse_grad(grad, self, target, reduction)},
      jvp=lambda self_t, target_t, self, target, reduction:
      _reduce((self - target) * (self_t - target_t) * 2, reduction),
      method=None, function=False, batch=_mse_batch)


def _nll_prepare(self, target, weight, ignore_index):
    """(input as (N, C, ...), safe target, per-element weights): NumPy arrays."""
    if np.iscomplexobj(self):
        raise RuntimeError("nll_loss is not implemented for complex input")
    x, t = (self[None], target[None]) if self.ndim == 1 else (self, target)
    if t.dtype.kind not in "iu":
        raise RuntimeError(f"expected scalar type Long but found {t.dtype}")
    ignored = t == ignore_index
    safe = np.where(ignored, 0, t).astype(np.int64)
    C = x.shape[1]
    if np.any((safe < 0) | (safe >= C)):
        raise IndexError(f"Target {int(t[(safe < 0) | (safe >= C)].flat[0])} is out of bounds.")
    w = np.ones(C, dtype=x.dtype) if weight is None else weight
    return x, safe, np.where(ignored, 0, w[safe]).astype(x.dtype)


def _nll(self, target, weight=None, ignore_index=-100, reduction="mean"):
    x, safe, w = _nll_prepare(self, target, weight, ignore_index)
    losses = -w * np.take_along_axis(x, safe[:, None], 1)[:, 0]
    if reduction == "none":
        return losses[0] if self.ndim == 1 else losses
    return losses.sum() if reduction == "sum" else losses.sum() / w.sum()


def _nll_vjp(grad, self_shape, self_dtype, target, weight, ignore_index, reduction):
    from .. import creation
    shape = (1,) + tuple(self_shape) if len(self_shape) == 1 else tuple(self_shape)
    x = np.zeros(tuple(self_shape), dtype=self_dtype.np)
    _, safe, w = _nll_prepare(x, target._data, None if weight is None else weight._data,
                              ignore_index)
    if reduction == "none":
        g = grad.reshape(safe.shape)
    else:
        g = grad.expand(safe.shape) / (float(w.sum()) if reduction == "mean" else 1.0)
    picked = (g * creation.tensor(-w)).unsqueeze(1)
    out = creation.zeros(shape, dtype=grad.dtype).scatter(1, creation.tensor(safe[:, None]), picked)
    return out.reshape(self_shape)


def _nll_batch(c):
    """nll_loss batched: the examples' rows (N of them, or 1 for a 1-d input)
    become one (B*N, C, ...) input, whose 'none' losses split per example."""
    if "weight" in c.batched or c.env["reduction"] not in _REDUCTIONS:
        raise NotBatchable("a batched weight, or an unknown reduction")
    x, t = c.materialize("self"), c.materialize("target")
    rows = tuple(x.shape[1:2]) + tuple(x.shape[3:]) if x.ndim > 2 else ()
    if x.ndim < 2 or tuple(t.shape[1:]) != rows:
        raise NotBatchable("shapes nll_loss refuses: the loop raises its error")
    if x.ndim > 2:
        n = x.shape[0] * x.shape[1]
        x, t = x.reshape(n, *x.shape[2:]), t.reshape(n, *t.shape[2:])
    args = dict(weight=c.env["weight"], ignore_index=c.env["ignore_index"], reduction="none")
    losses = call(OPS["nll_loss"], x, t, **args).reshape(c.size, *rows)
    if c.env["reduction"] == "none":
        return losses
    dims = tuple(range(1, losses.ndim))
    total = losses.sum(dim=dims) if dims else losses
    if c.env["reduction"] == "sum":
        return total
    # 'mean' divides by the example's total weight: the 'none' loss of inputs of -1
    weights = call(OPS["nll_loss"], creation.full(tuple(x.shape), -1.0, dtype=x.dtype), t,
                   **args).reshape(c.size, *rows)
    return total / (weights.sum(dim=dims) if dims else weights)


deflinear("nll_loss", _nll, inputs=("self", "target", "weight"), nondiff=("target", "weight"),
          vjp={"self": _nll_vjp}, method=None, function=False, batch=_nll_batch)


# ----- layer_norm: xhat = (x - mean) rstd over the last dims; y = xhat w + b -------
def _ln_dims(self, normalized_shape):
    k = len(tuple(normalized_shape))
    if tuple(self.shape[self.ndim - k:]) != tuple(normalized_shape):
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input with "
                           f"shape [*, {', '.join(map(str, normalized_shape))}], but got input of "
                           f"size{list(self.shape)}")
    return tuple(range(self.ndim - k, self.ndim))


def _layer_norm(self, normalized_shape, weight=None, bias=None, eps=1e-5):
    dims = _ln_dims(self, normalized_shape)
    mean = self.mean(axis=dims, keepdims=True)
    y = (self - mean) / np.sqrt(self.var(axis=dims, keepdims=True) + eps)
    y = y * weight if weight is not None else y
    return y + bias if bias is not None else y


def _ln_stats(self, normalized_shape, eps):
    dims = _ln_dims(self, normalized_shape)
    centered = self - self.mean(dim=dims, keepdim=True)
    rstd = ((centered * centered).mean(dim=dims, keepdim=True) + eps).rsqrt()
    return dims, centered * rstd, rstd


def _ln_project(g, xhat, rstd, dims):
    """rstd (g - mean(g) - xhat mean(g xhat)): the derivative of xhat, applied to g."""
    return rstd * (g - g.mean(dim=dims, keepdim=True) - xhat * (g * xhat).mean(dim=dims, keepdim=True))


def _ln_vjp_self(grad, self, weight, normalized_shape, eps):
    dims, xhat, rstd = _ln_stats(self, normalized_shape, eps)
    return _ln_project(grad * weight if weight is not None else grad, xhat, rstd, dims)


def _ln_jvp(self_t, weight_t, bias_t, self, weight, normalized_shape, eps):
    dims, xhat, rstd = _ln_stats(self, normalized_shape, eps)
    out = _ln_project(self_t, xhat, rstd, dims)
    out = out * weight if weight is not None else out
    if weight_t is not None:
        out = out + xhat * weight_t
    return out + bias_t if bias_t is not None else out


def _layer_norm_batch(c):
    """layer_norm batched: it normalizes trailing dims, so the batch dim is one
    more leading dim of self. A batched weight or bias gets size-1 dims up to
    self's rank (the engine sums its gradient back per example); an unbatched
    self is expanded, since its vjp counts the normalized dims from self's rank."""
    rank = c.rank("self")
    if rank < len(tuple(c.env["normalized_shape"])):
        raise NotBatchable("normalized_shape longer than self's shape: the loop raises the error")
    return c.run(self=c.materialize("self"), **pad_batched(c, ("weight", "bias"), rank))


defop("layer_norm", _layer_norm, inputs=("self", "weight", "bias"),
      promote=("self", "weight", "bias"), node="NativeLayerNormBackward0",
      refuse=no_complex_kernel("LayerNormKernelImpl"),
      vjp={"self": _ln_vjp_self,
           "weight": lambda grad, self, normalized_shape, eps:
           grad * _ln_stats(self, normalized_shape, eps)[1],
           "bias": lambda grad: grad},
      jvp=_ln_jvp, method=None, function=False, batch=_layer_norm_batch)


# ----- constant padding: affine; its adjoint is the crop, padding by -pad --------
def _pad_width(ndim, pad):
    if len(pad) % 2 or len(pad) // 2 > ndim:
        raise RuntimeError(f"Padding length must be divisible by 2 and at most twice the number "
                           f"of dimensions of the input; got {len(pad)} for {ndim} dims")
    width = [(0, 0)] * ndim
    for i in range(len(pad) // 2):
        width[ndim - 1 - i] = (int(pad[2 * i]), int(pad[2 * i + 1]))
    return width


def _constant_pad(self, pad, value=0.0):
    width = _pad_width(self.ndim, pad)
    grow = [(max(a, 0), max(b, 0)) for a, b in width]
    out = np.pad(self, grow, mode="constant", constant_values=value)
    crop = tuple(slice(-min(a, 0), out.shape[d] + min(b, 0)) for d, (a, b) in enumerate(width))
    return np.ascontiguousarray(out[crop])


def _pad_batch(c):
    # pad names trailing dims only; with more pairs than the example has dims
    # the physical call would pad the batch dim instead of failing
    if len(c.env["pad"]) // 2 > c.rank("self"):
        raise NotBatchable("more padding than dims: the loop raises the op's error")
    return c.run()


defop("constant_pad_nd", _constant_pad, promote=("self",),
      vjp={"self": lambda grad, pad: grad.constant_pad_nd([-p for p in pad], 0.0)},
      jvp=lambda self_t, pad: self_t.constant_pad_nd(pad, 0.0), function=False,
      batch=_pad_batch)
