"""The kernel zoo of issue 32: fused kernels, their references, correct and buggy.

Each kernel computes in float32 inside when its inputs are narrower (as a
fused Triton or CUDA kernel does) and in float64 when given float64 (so a
bug's own size can be measured without rounding); each has a reference of
ordinary ops. ``ZOO`` lists ``Case(name, kernel, reference, make_inputs,
bug, order)``: ``bug`` is ``None`` for a correct kernel, else the words for
what is wrong; ``order=2`` cases are judged at second order too. ``bench/kernels.py`` runs them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F


def acc(x):
    """The dtype a fused kernel computes in for inputs like ``x``."""
    return torch.float64 if x.dtype == torch.float64 else torch.float32


# ---------------------------------------------------------------- attention

def attention_reference(q, k, v):
    scale = 1 / math.sqrt(q.shape[-1])
    return torch.softmax(q @ k.transpose(-1, -2) * scale, dim=-1) @ v


def attention_forward_only(q, k, v):
    """Fused forward, no hand-written backward (autograd through it)."""
    a = acc(q)
    return attention_reference(q.to(a), k.to(a), v.to(a)).to(q.dtype)


def _attention(bug: str | None):
    class Attention(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v):
            a = acc(q)
            qf, kf, vf = q.to(a), k.to(a), v.to(a)
            scale = 1 / math.sqrt(q.shape[-1])
            p = torch.softmax(qf @ kf.transpose(-1, -2) * scale, dim=-1)
            ctx.save_for_backward(qf, kf, vf, p)
            ctx.meta = (q.dtype, scale)
            return (p @ vf).to(q.dtype)

        @staticmethod
        def backward(ctx, g):
            qf, kf, vf, p = ctx.saved_tensors
            dtype, scale = ctx.meta
            g = g.to(qf.dtype)
            dv = p.transpose(-1, -2) @ g
            dp = g @ vf.transpose(-1, -2)
            if bug == "dropped":     # the softmax backward without its row-sum term
                ds = p * dp
            else:
                ds = p * (dp - (p * dp).sum(-1, keepdim=True))
            s = scale * scale if bug == "scale twice" else scale
            return (ds @ kf * s).to(dtype), (ds.transpose(-1, -2) @ qf * scale).to(dtype), \
                dv.to(dtype)
    return Attention.apply


def attention_inputs(dtype, g):
    return tuple(torch.randn(1, 2, 8, 8, generator=g).to(dtype).requires_grad_()
                 for _ in range(3))


# ---------------------------------------------------------------- norms

def layer_norm_reference(x, w, b):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + 1e-5) * w + b


def _layer_norm(bug: str | None):
    class LayerNorm(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, b):
            a = acc(x)
            xf = x.to(a)
            mu = xf.mean(-1, keepdim=True)
            inv = torch.rsqrt(((xf - mu) ** 2).mean(-1, keepdim=True) + 1e-5)
            xhat = (xf - mu) * inv
            ctx.save_for_backward(xhat, inv, w.to(a))
            ctx.dtype = x.dtype
            return (xhat * w.to(a) + b.to(a)).to(x.dtype)

        @staticmethod
        def backward(ctx, g):
            xhat, inv, w = ctx.saved_tensors
            g = g.to(xhat.dtype)
            gh = g * w
            term = gh - (xhat * gh).mean(-1, keepdim=True) * xhat
            if bug != "mean dropped":  # the mean of the normalised gradient
                term = term - gh.mean(-1, keepdim=True)
            d = ctx.dtype
            return (inv * term).to(d), (g * xhat).sum(0).to(d), g.sum(0).to(d)
    return LayerNorm.apply


def layer_norm_inputs(dtype, g):
    return (torch.randn(4, 32, generator=g).to(dtype).requires_grad_(),
            (1 + 0.1 * torch.randn(32, generator=g)).to(dtype).requires_grad_(),
            (0.1 * torch.randn(32, generator=g)).to(dtype).requires_grad_())


def rms_norm_reference(x, w):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * w


def _rms_forward(x, w) -> tuple:
    """A fused RMS norm's forward: ``(x in the inner dtype, rstd, output)``."""
    xf = x.to(acc(x))
    inv = torch.rsqrt((xf * xf).mean(-1, keepdim=True) + 1e-6)
    return xf, inv, (xf * inv * w.to(xf.dtype)).to(x.dtype)


def _rms_norm(bug: str | None):
    class RMSNorm(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            xf, inv, y = _rms_forward(x, w)
            ctx.save_for_backward(xf, inv, w.to(xf.dtype))
            ctx.dtype = x.dtype
            return y

        @staticmethod
        def backward(ctx, g):
            xf, inv, w = ctx.saved_tensors
            g = g.to(xf.dtype)
            gh = g * w
            if bug == "wrong dim":    # the reduction over the rows, not the features
                dot = (gh * xf).mean(0, keepdim=True)
            else:
                dot = (gh * xf).mean(-1, keepdim=True)
            gx = inv * gh - xf * inv ** 3 * dot
            return gx.to(ctx.dtype), (g * xf * inv).sum(0).to(ctx.dtype)
    return RMSNorm.apply


def rms_norm_inputs(dtype, g):
    return (torch.randn(4, 32, generator=g).to(dtype).requires_grad_(),
            (1 + 0.1 * torch.randn(32, generator=g)).to(dtype).requires_grad_())


def _rms_norm_twice(bug: str | None):
    """RMS norm whose backward is made of torch ops on the saved inputs, so it
    can be differentiated again (second order); the bug saves the forward's
    rstd, which double backward then treats as a constant: first derivatives
    right, second wrong."""
    class RMSNorm2(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            _, inv, y = _rms_forward(x, w)
            ctx.save_for_backward(x, w, inv)
            return y

        @staticmethod
        def backward(ctx, g):
            x, w, saved = ctx.saved_tensors
            a = acc(x)
            xf, wf, g = x.to(a), w.to(a), g.to(a)
            inv = saved if bug == "saved rstd" else \
                torch.rsqrt((xf * xf).mean(-1, keepdim=True) + 1e-6)
            gh = g * wf
            gx = inv * gh - xf * inv ** 3 * (gh * xf).mean(-1, keepdim=True)
            return gx.to(x.dtype), (g * xf * inv).sum(0).to(w.dtype)
    return RMSNorm2.apply


def rms_norm_small_inputs(dtype, g):
    return (torch.randn(4, 16, generator=g).to(dtype).requires_grad_(),
            (1 + 0.1 * torch.randn(16, generator=g)).to(dtype).requires_grad_())


# ---------------------------------------------------------------- cross-entropy

SMOOTHING = 0.1
TARGETS = torch.tensor([3, 0, 7, 5, 1, 6])


def cross_entropy_reference(logits):
    return F.cross_entropy(logits, TARGETS.to(logits.device), label_smoothing=SMOOTHING)


def _cross_entropy(bug: str | None):
    class CrossEntropy(torch.autograd.Function):
        @staticmethod
        def forward(ctx, logits):
            lf = logits.to(acc(logits))
            n, c = lf.shape
            logp = torch.log_softmax(lf, -1)
            target = torch.full_like(lf, SMOOTHING / c)
            target[torch.arange(n), TARGETS] += 1 - SMOOTHING
            ctx.save_for_backward(logp, target)
            ctx.dtype = logits.dtype
            return (-(target * logp).sum() / n).to(logits.dtype)

        @staticmethod
        def backward(ctx, g):
            logp, target = ctx.saved_tensors
            n, c = logp.shape
            if bug == "smoothing over C-1":   # the smoothed mass spread over c - 1 classes
                target = torch.full_like(logp, SMOOTHING / (c - 1))
                target[torch.arange(n), TARGETS] += 1 - SMOOTHING
            grad = (logp.exp() - target) / n * g.to(logp.dtype)
            return grad.to(ctx.dtype)
    return CrossEntropy.apply


def cross_entropy_inputs(dtype, g):
    return (torch.randn(6, 16, generator=g).to(dtype).requires_grad_(),)


# ---------------------------------------------------------------- rotary

def _angles(s, d, dtype, device):
    inv = 1.0 / (10000 ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    t = torch.arange(s, dtype=torch.float64)[:, None] * inv[None, :]
    return t.cos().to(device=device, dtype=dtype), t.sin().to(device=device, dtype=dtype)


def rotary_reference(x):
    cos, sin = _angles(x.shape[-2], x.shape[-1], x.dtype, x.device)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack((a * cos - b * sin, a * sin + b * cos), -1).flatten(-2)


def _rotary(bug: str | None):
    class Rotary(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.dtype = x.dtype
            return rotary_reference(x.to(acc(x))).to(x.dtype)

        @staticmethod
        def backward(ctx, g):
            gf = g.to(acc(g))
            cos, sin = _angles(g.shape[-2], g.shape[-1], gf.dtype, g.device)
            if bug == "wrong sign":   # rotated forward again instead of back
                sin = -sin
            a, b = gf[..., 0::2], gf[..., 1::2]
            back = torch.stack((a * cos + b * sin, -a * sin + b * cos), -1).flatten(-2)
            return back.to(ctx.dtype)
    return Rotary.apply


def rotary_inputs(dtype, g):
    return (torch.randn(2, 8, 16, generator=g).to(dtype).requires_grad_(),)


# ---------------------------------------------------------------- activations

C_GELU = math.sqrt(2 / math.pi)


def gelu_reference(x):
    return 0.5 * x * (1 + torch.tanh(C_GELU * (x + 0.044715 * x ** 3)))


def _gelu(bug: str | None):
    class Gelu(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            xf = x.to(acc(x))
            ctx.save_for_backward(xf)
            ctx.dtype = x.dtype
            return gelu_reference(xf).to(x.dtype)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            if bug == "exact-GELU derivative":   # erf GELU's derivative behind a tanh forward
                d = 0.5 * (1 + torch.erf(x / math.sqrt(2))) + x * torch.exp(-x * x / 2) / \
                    math.sqrt(2 * math.pi)
            else:
                t = torch.tanh(C_GELU * (x + 0.044715 * x ** 3))
                d = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * C_GELU * (1 + 3 * 0.044715 * x * x)
            return (g.to(x.dtype) * d).to(ctx.dtype)
    return Gelu.apply


def gelu_inputs(dtype, g):
    return ((2 * torch.randn(64, generator=g)).to(dtype).requires_grad_(),)


def swiglu_reference(a, b):
    return a * torch.sigmoid(a) * b


def _swiglu(bug: str | None):
    class SwiGLU(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            af, bf = a.to(acc(a)), b.to(acc(b))
            ctx.save_for_backward(af, bf)
            ctx.dtype = a.dtype
            return (af * torch.sigmoid(af) * bf).to(a.dtype)

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            g = g.to(a.dtype)
            s = torch.sigmoid(a)
            ds = s * (1 + a * (1 - s))
            if bug == "wrong sign":     # silu's derivative with its second term negated
                ds = s * (1 - a * (1 - s))
            return (g * ds * b).to(ctx.dtype), (g * a * s).to(ctx.dtype)
    return SwiGLU.apply


def swiglu_inputs(dtype, g):
    return (torch.randn(8, 16, generator=g).to(dtype).requires_grad_(),
            torch.randn(8, 16, generator=g).to(dtype).requires_grad_())


# ---------------------------------------------------------------- fused linear

def linear_gelu_reference(x, w, b):
    return gelu_reference(x @ w.T + b)


def _linear_gelu(bug: str | None):
    class LinearGelu(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, b):
            a = acc(x)
            xf, wf = x.to(a), w.to(a)
            z = xf @ wf.T + b.to(a)
            ctx.save_for_backward(xf, wf, z)
            ctx.dtype = x.dtype
            return gelu_reference(z).to(x.dtype)

        @staticmethod
        def backward(ctx, g):
            x, w, z = ctx.saved_tensors
            t = torch.tanh(C_GELU * (z + 0.044715 * z ** 3))
            d = 0.5 * (1 + t) + 0.5 * z * (1 - t * t) * C_GELU * (1 + 3 * 0.044715 * z * z)
            gz = g.to(x.dtype) * d
            gb = gz.sum(0)
            if bug == "bias grad * 127/128":   # an off-by-one normalisation of the bias grad
                gb = gb * (1 - 1 / 128)
            dt = ctx.dtype
            return (gz @ w).to(dt), (gz.T @ x).to(dt), gb.to(dt)
    return LinearGelu.apply


def linear_inputs(dtype, g):
    return (torch.randn(8, 16, generator=g).to(dtype).requires_grad_(),
            (torch.randn(12, 16, generator=g) / 4).to(dtype).requires_grad_(),
            (0.1 * torch.randn(12, generator=g)).to(dtype).requires_grad_())


@dataclass(frozen=True)
class Case:
    """One kernel of the zoo; ``bug`` is ``None`` when it is correct."""

    name: str
    kernel: Callable
    reference: Callable
    inputs: Callable
    bug: str | None = None
    #: 2: judged with order=2 (its vjp's own derivatives too)
    order: int = 1


def _cases(name, make, reference, inputs, bugs, order=1) -> list:
    return [Case(name, make(None), reference, inputs, order=order)] + \
        [Case(name, make(bug), reference, inputs, bug, order) for bug in bugs]


ZOO = [Case("attention, fused forward only", attention_forward_only, attention_reference,
            attention_inputs)] \
    + _cases("attention, hand-written backward", _attention, attention_reference,
             attention_inputs, ["dropped", "scale twice"]) \
    + _cases("layer norm", _layer_norm, layer_norm_reference, layer_norm_inputs,
             ["mean dropped"]) \
    + _cases("RMS norm", _rms_norm, rms_norm_reference, rms_norm_inputs, ["wrong dim"]) \
    + _cases("RMS norm, second order", _rms_norm_twice, rms_norm_reference,
             rms_norm_small_inputs, ["saved rstd"], order=2) \
    + _cases("cross-entropy, label smoothing", _cross_entropy, cross_entropy_reference,
             cross_entropy_inputs, ["smoothing over C-1"]) \
    + _cases("rotary embedding", _rotary, rotary_reference, rotary_inputs, ["wrong sign"]) \
    + _cases("GELU (tanh)", _gelu, gelu_reference, gelu_inputs, ["exact-GELU derivative"]) \
    + _cases("SwiGLU", _swiglu, swiglu_reference, swiglu_inputs, ["wrong sign"]) \
    + _cases("matmul + bias + GELU", _linear_gelu, linear_gelu_reference, linear_inputs,
             ["bias grad * 127/128"])
