"""sinc(x) = sin(x) / x with a backward that is right at every x but 0.

At x = 0 the formula divides 0 by 0 and gives NaN, while sinc'(0) = 0: random
inputs never land there; the quick pass of special inputs (on by default)
and ``--explore`` do.

    adcheck check sinc.py:Sinc --inputs "randn(4)" --no-explore   # exits 0
    adcheck check sinc.py:Sinc --inputs "randn(4)"                # exits 1
"""
import adcheck.refengine as E
from adcheck.refengine.autograd import Function


class Sinc(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        safe = E.where(x == 0, E.ones_like(x), x)
        return E.where(x == 0, E.ones_like(x), E.sin(safe) / safe)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (E.cos(x) / x - E.sin(x) / (x * x))    # NaN at 0: 0/0
