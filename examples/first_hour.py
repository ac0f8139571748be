"""A new user's first hour with ``adcheck check`` (docs/check.md runs these).

    adcheck check first_hour.py:ScaledWeightGrad   # exits 1: w's gradient 1.5 times too large
    adcheck check first_hour.py:RowSoftmaxWrongAxis
                                                   # exits 1: backward sums over the wrong axis
    adcheck check first_hour.py:RowSoftmaxSignFlip # exits 1: one term's sign flipped
    adcheck check first_hour.py:TransposedWeightGrad --inputs "randn(3, 4); randn(4, 4)"
                                                   # exits 1: the weight's gradient transposed
    adcheck check first_hour.py:calls_no_jvp       # exits 0: forward skipped, no jvp inside
    adcheck check first_hour.py:total --args 'dim=1'
    adcheck check first_hour.py:real_only          # exits 0, warns: no complex input
    adcheck check first_hour.py:pick --engine torch --inputs "randn(5, 3); randint(5, 2, 3) int64"
    adcheck check plain_jax.py:jax_sin             # exits 2: add --engine jax
"""
import adcheck.refengine as E
from adcheck.refengine.autograd import Function


class ScaledWeightGrad(Function):
    """x * w whose gradient for w is 1.5 times too large."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x * w

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        return grad * w, grad * x * 1.5


class RowSoftmax(Function):
    """softmax over the last axis, the forward of the two wrong ones below."""

    @staticmethod
    def forward(ctx, x):
        e = E.exp(x)
        y = e / e.sum(-1, keepdim=True)
        ctx.save_for_backward(y)
        return y


class RowSoftmaxWrongAxis(RowSoftmax):
    """softmax over the last axis whose backward sums over the first axis: right
    on a single row, wrong on several."""

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return y * (grad - (grad * y).sum(0, keepdim=True))


class NoJvpSin(Function):
    """sin with a right backward and no jvp."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return E.sin(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * E.conj(E.cos(x))


def calls_no_jvp(x):
    """A plain function calling a Function that has no jvp."""
    return NoJvpSin.apply(x) * 2


def total(x, dim):
    """A reduction with a required non-tensor argument."""
    return (x * x).sum(dim)


def real_only(x):
    """A function that refuses complex inputs."""
    if x.dtype in (E.complex64, E.complex128):
        raise TypeError("real_only takes real tensors")
    return E.sin(x)


class TransposedWeightGrad(Function):
    """x @ w whose gradient for the square weight w is transposed."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x @ w

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        return grad @ w.mT, (x.mT @ grad).mT


def pick(x, idx):
    """Entries of x picked by an index tensor (torch)."""
    return x.gather(0, idx) ** 2


class TransposedWeightGrad(Function):
    """x @ w whose gradient for the square weight w is transposed."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x @ w

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        return grad @ w.mT, (x.mT @ grad).mT


class RowSoftmaxSignFlip(RowSoftmax):
    """softmax over the last axis whose backward adds y (g . y) where it subtracts it."""

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return y * (grad + (grad * y).sum(-1, keepdim=True))
