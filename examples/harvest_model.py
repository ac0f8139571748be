"""A small transformer-style model with hand-written derivatives, two of them wrong.

``adcheck check examples/harvest_model.py:Model --harvest`` records every
custom ``torch.autograd.Function`` the model applies during one forward, at
the inputs the model really feeds it, and checks each on its own:

- ``RMSNormFn`` (``blocks.N.norm1``, ``blocks.N.norm2``): right;
- ``AttnSoftmaxFn`` (``blocks.N.attn``, with a causal mask and a scale as
  non-tensor arguments): right;
- ``GeluTanhFn`` (``blocks.N.mlp.act``, with a jvp): right;
- ``LayerScaleFn`` (``blocks.N.ls``, gradient in the parameter ``gamma``): right;
- ``ScaleNormFn`` (``norm_f``): WRONG, its input gradient is off by 1e-3
  relative, which a fixed rtol of 1e-3 lets through;
- ``TemperatureFn`` (``temp``): WRONG, the gradient in its parameter
  ``log_t`` is twice what it should be.

``example_inputs()`` gives the inputs the command line uses when no
``--inputs`` is given.
"""
import math

import torch
from torch import nn

#: the relative error of ScaleNormFn's input gradient
SCALENORM_ERROR = 1e-3
#: the factor TemperatureFn's log-temperature gradient is off by
TEMPERATURE_FACTOR = 2.0


class RMSNormFn(torch.autograd.Function):
    """y = x / rms(x) * w over the last dimension."""

    @staticmethod
    def forward(ctx, x, weight, eps):
        ctx.save_for_backward(x, weight)
        ctx.eps = eps
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        # recomputed from x, not saved by forward (which runs without a graph):
        # so that the second derivative sees how inv depends on x
        inv = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + ctx.eps)
        n = x.shape[-1]
        xhat = x * inv
        gx_hat = grad * weight
        gx = inv * (gx_hat - xhat * (gx_hat * xhat).sum(-1, keepdim=True) / n)
        gw = (grad * xhat).reshape(-1, n).sum(0)
        return gx, gw, None


class AttnSoftmaxFn(torch.autograd.Function):
    """softmax(scale * s) over the last dimension, future positions masked when causal."""

    @staticmethod
    def forward(ctx, scores, scale, causal):
        s = scores * scale
        if causal:
            n = s.shape[-1]
            mask = torch.ones(n, n, dtype=torch.bool).triu(1)
            s = s.masked_fill(mask, float("-inf"))
        p = torch.softmax(s, -1)
        ctx.save_for_backward(p)
        ctx.scale = scale
        return p

    @staticmethod
    def backward(ctx, grad):
        (p,) = ctx.saved_tensors
        gs = p * (grad - (grad * p).sum(-1, keepdim=True))
        return gs * ctx.scale, None, None


class GeluTanhFn(torch.autograd.Function):
    """The tanh approximation of GELU, with a backward and a jvp."""

    @staticmethod
    def forward(x):
        return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.save_for_backward(x)
        ctx.x = x

    @staticmethod
    def _derivative(x):
        c = math.sqrt(2 / math.pi)
        u = c * (x + 0.044715 * x ** 3)
        t = torch.tanh(u)
        return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * GeluTanhFn._derivative(x)

    @staticmethod
    def jvp(ctx, tangent):
        return tangent * GeluTanhFn._derivative(ctx.x)


class LayerScaleFn(torch.autograd.Function):
    """y = x * gamma, gamma a parameter per feature."""

    @staticmethod
    def forward(ctx, x, gamma):
        ctx.save_for_backward(x, gamma)
        return x * gamma

    @staticmethod
    def backward(ctx, grad):
        x, gamma = ctx.saved_tensors
        return grad * gamma, (grad * x).reshape(-1, x.shape[-1]).sum(0)


class ScaleNormFn(torch.autograd.Function):
    """y = g * x / ||x|| over the last dimension. Its x-gradient is WRONG by
    SCALENORM_ERROR relative; and it keeps ``norm`` from its forward, where
    nothing is recorded, so its double backward takes it for a constant."""

    @staticmethod
    def forward(ctx, x, g):
        norm = x.norm(dim=-1, keepdim=True)
        ctx.save_for_backward(x, g, norm)
        return g * x / norm

    @staticmethod
    def backward(ctx, grad):
        x, g, norm = ctx.saved_tensors
        xhat = x / norm
        gx = g / norm * (grad - xhat * (grad * xhat).sum(-1, keepdim=True))
        gg = (grad * xhat).sum().reshape(g.shape)
        return gx * (1 + SCALENORM_ERROR), gg


class TemperatureFn(torch.autograd.Function):
    """y = z * exp(-log_t). The gradient in log_t is WRONG by TEMPERATURE_FACTOR."""

    @staticmethod
    def forward(ctx, z, log_t):
        y = z * torch.exp(-log_t)
        ctx.save_for_backward(y, log_t)
        return y

    @staticmethod
    def backward(ctx, grad):
        y, log_t = ctx.saved_tensors
        return grad * torch.exp(-log_t), -(grad * y).sum().reshape(log_t.shape) * TEMPERATURE_FACTOR


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(d))
        self.eps = eps

    def forward(self, x):
        return RMSNormFn.apply(x, self.weight, self.eps)


class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)

    def forward(self, x):
        n, d = x.shape
        q, k, v = self.qkv(x).reshape(n, 3, self.heads, d // self.heads).permute(1, 2, 0, 3)
        p = AttnSoftmaxFn.apply(q @ k.transpose(-1, -2), 1 / math.sqrt(d // self.heads), True)
        return self.out((p @ v).transpose(0, 1).reshape(n, d))


class GeluTanh(nn.Module):
    def forward(self, x):
        return GeluTanhFn.apply(x)


class MLP(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.up, self.act, self.down = nn.Linear(d, 2 * d), GeluTanh(), nn.Linear(2 * d, d)

    def forward(self, x):
        return self.down(self.act(self.up(x)))


class LayerScale(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.gamma = nn.Parameter(0.5 + 0.1 * torch.randn(d))

    def forward(self, x):
        return LayerScaleFn.apply(x, self.gamma)


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.norm1, self.attn = RMSNorm(d), Attention(d, heads)
        self.norm2, self.mlp, self.ls = RMSNorm(d), MLP(d), LayerScale(d)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.ls(self.mlp(self.norm2(x)))


class ScaleNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.g = nn.Parameter(torch.tensor([math.sqrt(d)]))

    def forward(self, x):
        return ScaleNormFn.apply(x, self.g)


class Temperature(nn.Module):
    def __init__(self):
        super().__init__()
        self.log_t = nn.Parameter(torch.tensor([0.3]))

    def forward(self, z):
        return TemperatureFn.apply(z, self.log_t)


class Model(nn.Module):
    """Two pre-norm blocks, a final ScaleNorm, a linear head and a temperature."""

    def __init__(self, d=8, heads=2, depth=2, classes=5):
        super().__init__()
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(depth))
        self.norm_f, self.head, self.temp = ScaleNorm(d), nn.Linear(d, classes), Temperature()

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.temp(self.head(self.norm_f(x)))


def example_inputs():
    """Four tokens of eight features, as the model is fed them."""
    generator = torch.Generator().manual_seed(0)
    return (torch.randn(4, 8, generator=generator),)
