"""Two hand-written derivative formulas for ``adcheck check``: one right, one wrong.

    adcheck check myops:MySin      # exits 1: the backward is off by a factor 2
    adcheck check myops:MyTanh     # exits 0
"""
import adcheck.refengine as E
from adcheck.refengine.autograd import Function


class MySin(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return E.sin(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * grad * E.cos(x)      # wrong: the 2 does not belong here


class MyTanh(Function):
    @staticmethod
    def forward(ctx, x):
        y = E.tanh(x)
        ctx.save_for_backward(y)
        ctx.save_for_forward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * (1 - y * y).conj()    # conj: complex inputs (conjugate Wirtinger)

    @staticmethod
    def jvp(ctx, x_t):
        (y,) = ctx.saved_tensors         # inside jvp: what save_for_forward kept
        return x_t * (1 - y * y)
