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
    """y = (x - mean) / sqrt(var + 1e-5) per row; its backward, right."""

    @staticmethod
    def forward(ctx, x):
        y, rstd = _forward(x)
        ctx.save_for_backward(y, rstd)
        return y

    @staticmethod
    def backward(ctx, g):
        y, rstd = ctx.saved_tensors
        gm = g.mean(dim=-1, keepdim=True)
        gy = (g * y).mean(dim=-1, keepdim=True)
        return rstd * (g - gm - y * gy)


class RowLayerNormBuggy(RowLayerNorm):
    """The same forward; the backward's mean of g * y over dim 0 (wrong)."""

    @staticmethod
    def backward(ctx, g):
        y, rstd = ctx.saved_tensors
        gm = g.mean(dim=-1, keepdim=True)
        gy = (g * y).mean(dim=0, keepdim=True)   # the bug: dim=-1 is right
        return rstd * (g - gm - y * gy)
