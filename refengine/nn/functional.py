"""``refengine.nn.functional``: PyTorch's ``torch.nn.functional`` on refengine tensors.

The ops with a derivative rule of their own are defined in
``refengine/ops/nn.py`` and ``refengine/ops/conv.py``; the functions here
either call them or, where PyTorch also composes (linear, cross_entropy,
dropout, reflect and replicate padding), compose differentiable ops.
"""
from __future__ import annotations

from .. import creation
from ..ops.conv import conv_nd
from ..ops.dispatch import call
from ..ops.opdef import OPS, no_complex_kernel

__all__ = [
    "conv1d",
    "conv2d",
    "cross_entropy",
    "dropout",
    "elu",
    "gelu",
    "hardtanh",
    "layer_norm",
    "leaky_relu",
    "linear",
    "log_softmax",
    "mse_loss",
    "nll_loss",
    "pad",
    "relu",
    "silu",
    "softmax",
    "softplus",
]


def _elementwise(name, input, inplace, *args):
    op = OPS[name]
    if inplace:
        return getattr(input, f"{name}_")(*args)
    return call(op, input, *args)


def relu(input, inplace=False):
    """``max(x, 0)``; the gradient at 0 is 0."""
    return input.relu_() if inplace else input.relu()


def gelu(input, approximate="none"):
    """``x * Phi(x)`` (``approximate='tanh'``: the tanh approximation)."""
    return call(OPS["gelu"], input, approximate)


def silu(input, inplace=False):
    """``x * sigmoid(x)``."""
    return _elementwise("silu", input, inplace)


def softplus(input, beta=1.0, threshold=20.0):
    """``log(1 + exp(beta x)) / beta``, and ``x`` where ``beta x > threshold``."""
    return call(OPS["softplus"], input, beta, threshold)


def elu(input, alpha=1.0, inplace=False):
    """``x`` for x > 0, ``alpha (exp(x) - 1)`` otherwise."""
    return _elementwise("elu", input, inplace, alpha)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """``x`` for x > 0, ``negative_slope * x`` otherwise."""
    return _elementwise("leaky_relu", input, inplace, negative_slope)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """``clamp(x, min_val, max_val)``; no gradient at or beyond the bounds."""
    return _elementwise("hardtanh", input, inplace, min_val, max_val)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``exp(x) / sum(exp(x))`` along ``dim``."""
    return call(OPS["softmax"], input, _dim(input, dim), dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``x - logsumexp(x)`` along ``dim``."""
    return call(OPS["log_softmax"], input, _dim(input, dim), dtype)


def _dim(input, dim):
    if dim is not None:
        return dim
    return 0 if input.ndim in (0, 1, 3) else 1   # PyTorch's legacy implicit choice


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """The mean (``reduction``) squared error."""
    return call(OPS["mse_loss"], input, target, reduction)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """The negative log likelihood of class indices ``target`` under log-probabilities ``input``."""
    return call(OPS["nll_loss"], input, target, weight, ignore_index, reduction)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """Cross entropy of logits ``input`` against class indices or class probabilities."""
    logp = log_softmax(input, 1 if input.ndim > 1 else 0)
    class_dim = 1 if input.ndim > 1 else 0
    n_classes = input.shape[class_dim]
    w = None if weight is None else weight.reshape((-1,) + (1,) * (input.ndim - class_dim - 1))
    if target.is_floating_point():
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / n_classes
        terms = logp * target if w is None else logp * target * w
        losses = -terms.sum(class_dim)
        if reduction == "mean":
            return losses.sum() / max(input.numel() // n_classes, 1)
        return losses.sum() if reduction == "sum" else losses
    loss = nll_loss(logp, target, weight, None, ignore_index, None, reduction)
    if label_smoothing <= 0:
        return loss
    ignored = target == ignore_index
    smooth = -(logp if w is None else logp * w).sum(class_dim)
    smooth = smooth.masked_fill(ignored, 0.0)
    if reduction == "mean":
        if weight is None:
            denom = (~ignored).sum()
        else:
            denom = weight[target.masked_fill(ignored, 0)].masked_fill(ignored, 0.0).sum()
        smooth = smooth.sum() / denom
    elif reduction == "sum":
        smooth = smooth.sum()
    return loss * (1 - label_smoothing) + smooth * (label_smoothing / n_classes)


def linear(input, weight, bias=None):
    """``input @ weight.T + bias``."""
    out = input.matmul(weight.t() if weight.ndim == 2 else weight)
    return out if bias is None else out + bias


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-d cross-correlation over (N, C, L) inputs."""
    return conv_nd(1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-d cross-correlation over (N, C, H, W) inputs."""
    return conv_nd(2, input, weight, bias, stride, padding, dilation, groups)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the trailing ``normalized_shape`` dims, then scale and shift."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    return call(OPS["layer_norm"], input, tuple(normalized_shape), weight, bias, eps)


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability ``p`` (refengine's generator), scale by 1/(1-p).

    In eval mode or with ``p=0`` the input itself is returned.
    """
    if p < 0 or p > 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0 or input.numel() == 0:
        return input
    # (torch draws its mask with bernoulli, which has no complex kernel)
    no_complex_kernel("bernoulli_scalar_cpu_")({"input": input})
    if p == 1:
        noise = creation.zeros((), dtype=input.dtype)
    else:
        keep = creation._generator().random(tuple(input.shape)) >= p
        noise = creation.tensor(keep / (1 - p), dtype=input.dtype)
    return input.mul_(noise) if inplace else input * noise


def pad(input, pad, mode="constant", value=None):
    """Pad the last ``len(pad) // 2`` dims: ``(left, right, top, bottom, ...)``.

    ``mode``: 'constant' (with ``value``; negative padding crops), 'reflect',
    'replicate' or 'circular' (these gather with index_select).
    """
    if mode == "constant":
        return call(OPS["constant_pad_nd"], input, tuple(pad), 0.0 if value is None else value)
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    out = input
    for i in range(len(pad) // 2):
        dim = input.ndim - 1 - i
        index = _pad_index(input.shape[dim], pad[2 * i], pad[2 * i + 1], mode)
        out = out.index_select(dim, creation.tensor(index))
    return out


def _pad_index(n, left, right, mode):
    import numpy as np
    pos = np.arange(-left, n + right)
    if mode == "replicate":
        return np.clip(pos, 0, n - 1)
    if mode == "circular":
        if left > n or right > n:
            raise RuntimeError("Padding value causes wrapping around more than once.")
        return pos % n
    if left >= n or right >= n:
        raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding "
                           f"input dimension, but got: padding ({left}, {right}) at dimension "
                           f"of input {n}")
    period = 2 * (n - 1)
    pos = np.abs(pos) % period if period else np.zeros_like(pos)
    return np.where(pos >= n, period - pos, pos)
