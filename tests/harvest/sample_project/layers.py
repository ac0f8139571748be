"""A small project's layers: custom Functions its own tests call."""
import torch


class Softplus(torch.autograd.Function):
    """log(1 + exp(x)), right."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.nn.functional.softplus(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * torch.sigmoid(x)


class Cube(torch.autograd.Function):
    """x ** 3, with a backward WRONG by a factor: 2 x ** 2 instead of 3 x ** 2."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 2 * x ** 2


class Gate(torch.nn.Module):
    def forward(self, x):
        return Cube.apply(Softplus.apply(x))
