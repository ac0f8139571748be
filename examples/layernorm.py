"""A row-wise layer norm (no affine part) with a hand-written backward, right and
wrong: the wrong one takes the mean of g*y over the rows (dim 0) instead of within
each row, which only an input with several rows can show (docs/cli.md).

    adcheck check layernorm.py:RowLayerNormBuggy --inputs "randn(300, 100)"   # exits 1
"""
import torch


def _forward(x):
    mu = x.mean(dim=-1, keepdim=True)
    xc = x - mu
    var = (xc * xc).mean(dim=-1, keepdim=True)
    rstd = 1.0 / torch.sqrt(var + 1e-5)
    return xc * rstd, rstd


class RowLayerNorm(torch.autograd.Function):
    """y = (x - mean) / sqrt(var + 1e-5) per row; its backward, right (twice
    differentiable: adcheck's default checks include gradgrad)."""

    @staticmethod
    def forward(ctx, x):
        y, _ = _forward(x)
        # rstd is recomputed from x in backward rather than saved: computed
        # here, it would be a constant to a double backward (forward runs
        # without a graph), and the second derivative would be wrong
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        _, rstd = _forward(x)
        gm = g.mean(dim=-1, keepdim=True)
        gy = (g * y).mean(dim=-1, keepdim=True)
        return rstd * (g - gm - y * gy)


class RowLayerNormBuggy(RowLayerNorm):
    """The same forward; the backward's mean of g * y over dim 0 (wrong)."""

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        _, rstd = _forward(x)
        gm = g.mean(dim=-1, keepdim=True)
        gy = (g * y).mean(dim=0, keepdim=True)   # the bug: dim=-1 is right
        return rstd * (g - gm - y * gy)
