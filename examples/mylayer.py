"""A custom torch layer with a hand-written backward (needs PyTorch).

``ScaledLinear`` computes ``y = x @ weight.T / sqrt(in_features) + bias``.
Its backward scales the input's gradient right but forgets the scale in the
weight's gradient: ``adcheck check mylayer.py:ScaledLinear`` finds it and
names ``weight``. ``make_layer`` is a factory for a layer of another size.
"""
import math

import torch


class ScaledLinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        ctx.scale = 1 / math.sqrt(weight.shape[1])
        return x @ weight.T * ctx.scale + bias

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        grad_x = grad @ weight * ctx.scale
        grad_weight = grad.T @ x              # wrong: the scale is missing
        grad_bias = grad.sum(0)
        return grad_x, grad_weight, grad_bias


class ScaledLinear(torch.nn.Module):
    def __init__(self, in_features=3, out_features=2):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(out_features, in_features))
        self.bias = torch.nn.Parameter(torch.zeros(out_features))

    def forward(self, x):
        return ScaledLinearFunction.apply(x, self.weight, self.bias)


def make_layer():
    """A 4-to-3 layer: point adcheck at a factory when the constructor needs arguments."""
    return ScaledLinear(4, 3)
