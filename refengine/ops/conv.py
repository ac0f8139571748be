"""Convolution (conv1d, conv2d, any number of spatial dims) by im2col.

``im2col`` gathers every kernel window into columns and ``col2im`` sums
columns back into an image; both are linear and each is the other's
adjoint, so each one's vjp is the other. The convolution is then a
batched matrix product of the weight with the columns: its vjps are
``col2im(W^H g)`` for the input and ``g cols^H`` for the weight, and its
jvp is bilinear.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from ..batching.batched import NotBatchable
from .dispatch import call
from .opdef import OPS, deflinear, defop

C = dict(method=None, function=False)


def _out_size(size, k, dilation, pad, stride):
    return (size + pad[0] + pad[1] - dilation * (k - 1) - 1) // stride + 1


def _out_sizes(spatial, kernel_size, dilation, padding, stride) -> list:
    outs = [_out_size(s, k, d, p, st) for s, k, d, p, st in
            zip(spatial, kernel_size, dilation, padding, stride)]
    if any(o <= 0 for o in outs):
        raise RuntimeError(f"Calculated output size {outs} is too small for input {list(spatial)}")
    return outs


def _windows(spatial, kernel_size, dilation, padding, stride):
    """For every kernel offset: the slices of the padded input it reads."""
    outs = _out_sizes(spatial, kernel_size, dilation, padding, stride)
    # each dim's slices made once: the windows are their products, in the offsets' order
    per_dim = [[slice(o * d, o * d + (n - 1) * st + 1, st) for o in range(k)]
               for k, d, n, st in zip(kernel_size, dilation, outs, stride)]
    for offset, window in zip(itertools.product(*(range(k) for k in kernel_size)),
                              itertools.product(*per_dim)):
        yield offset, window, outs


def _im2col(self, kernel_size, dilation, padding, stride):
    lead = self.ndim - len(kernel_size)
    if not all(kernel_size):
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel size "
                           f"{list(kernel_size)}")
    x = _padded(self, lead, padding)
    outs = _out_sizes(self.shape[lead:], kernel_size, dilation, padding, stride)
    # every window at once: a strided view (kernel offsets step by dilation,
    # outputs by stride) copied in one pass; a copy per window was several
    # times slower on a batch of images (short rows, one setitem each)
    steps = x.strides[lead:]
    windows = np.lib.stride_tricks.as_strided(
        x, x.shape[:lead] + tuple(kernel_size) + tuple(outs),
        x.strides[:lead] + tuple(d * s for d, s in zip(dilation, steps))
        + tuple(st * s for st, s in zip(stride, steps)), writeable=False)
    return windows.copy()


def _padded(a, lead: int, padding):
    """``a`` with zeros around its trailing dims (np.pad's constant mode, without
    its generic machinery: a tenth of a small convolution's time); ``a`` itself,
    only read, when nothing is padded."""
    if not any(p[0] or p[1] for p in padding):
        return a
    spatial = a.shape[lead:]
    x = np.zeros(a.shape[:lead] + tuple(s + p[0] + p[1] for s, p in zip(spatial, padding)),
                 dtype=a.dtype)
    x[(Ellipsis,) + tuple(slice(p[0], p[0] + s) for s, p in zip(spatial, padding))] = a
    return x


def _col2im(self, input_size, kernel_size, dilation, padding, stride):
    nk = len(kernel_size)
    lead = self.ndim - 2 * nk
    padded = tuple(s + p[0] + p[1] for s, p in zip(input_size, padding))
    # the sums run with the leading dims last (long contiguous rows; with them
    # first each window's rows are a few elements), each place summing the
    # windows in the same order from the same zero: the same values
    cols = np.ascontiguousarray(self.transpose(tuple(range(lead, self.ndim)) + tuple(range(lead))))
    acc = np.zeros(padded + self.shape[:lead], dtype=self.dtype)
    for offset, window, _ in _windows(input_size, kernel_size, dilation, padding, stride):
        part = acc[window]      # a view: the sum written in place, no setitem
        np.add(part, cols[offset], out=part)
    x = np.ascontiguousarray(acc.transpose(tuple(range(nk, nk + lead)) + tuple(range(nk))))
    crop = tuple(slice(p[0], p[0] + s) for s, p in zip(input_size, padding))
    return x[(Ellipsis,) + crop]


def _leading_rule(dims_per_kernel_dim: int):
    """im2col and col2im act on the trailing dims and keep any leading ones,
    the batch dim among them."""
    def rule(c):
        if c.rank("self") < dims_per_kernel_dim * len(c.env["kernel_size"]):
            raise NotBatchable("too few dims: the loop raises the op's error")
        return c.run()
    return rule


deflinear("im2col", _im2col,
          vjp={"self": lambda grad, self_shape, kernel_size, dilation, padding, stride:
               grad.col2im(tuple(self_shape[len(self_shape) - len(kernel_size):]), kernel_size,
                           dilation, padding, stride)}, function=False, batch=_leading_rule(1))
deflinear("col2im", _col2im,
          vjp={"self": lambda grad, kernel_size, dilation, padding, stride:
               grad.im2col(kernel_size, dilation, padding, stride)}, function=False,
          batch=_leading_rule(2))


def _shapes(input, weight, groups):
    N, Cin = input.shape[:2]
    Cout, Cg = weight.shape[:2]
    if Cin != Cg * groups or Cout % groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, expected "
                           f"input{list(input.shape)} to have {Cg * groups} channels, but got "
                           f"{Cin} channels instead")
    return N, groups, Cout // groups, Cg * math.prod(weight.shape[2:])


def _convolution(input, weight, bias, stride, padding, dilation, groups):
    N, g, Fg, CK = _shapes(input, weight, groups)
    cols = _im2col(input, weight.shape[2:], dilation, padding, stride)
    outs = cols.shape[2 + weight.ndim - 2:]
    cols = cols.reshape(N, g, CK, -1)
    out = np.matmul(weight.reshape(g, Fg, CK), cols).reshape((N, g * Fg) + outs)
    if bias is not None:
        out = out + bias.reshape((1, -1) + (1,) * len(outs))
    return out


def _conv_grads(grad, input_shape, weight_shape, groups):
    N, g, Fg, CK = _shapes_of(input_shape, weight_shape, groups)
    return grad.reshape(N, g, Fg, -1), N, g, Fg, CK


def _shapes_of(input_shape, weight_shape, groups):
    Cout, Cg = weight_shape[:2]
    return input_shape[0], groups, Cout // groups, Cg * math.prod(weight_shape[2:])


def _conv_vjp_input(grad, input_shape, weight, stride, padding, dilation, groups):
    g_r, N, g, Fg, CK = _conv_grads(grad, input_shape, weight.shape, groups)
    cols = weight.reshape(g, Fg, CK).mH.matmul(g_r)            # (N, g, CK, O)
    K = tuple(weight.shape[2:])
    cols = cols.reshape((N, input_shape[1]) + K + tuple(grad.shape[2:]))
    return cols.col2im(tuple(input_shape[2:]), K, dilation, padding, stride)


def _conv_vjp_weight(grad, input, weight_shape, stride, padding, dilation, groups):
    g_r, N, g, _, CK = _conv_grads(grad, input.shape, weight_shape, groups)
    cols = input.im2col(tuple(weight_shape[2:]), dilation, padding, stride).reshape(N, g, CK, -1)
    return g_r.matmul(cols.mH).sum(0).reshape(weight_shape)


def _conv_jvp(input_t, weight_t, bias_t, input, weight, stride, padding, dilation, groups):
    op = OPS["convolution"]
    out = (call(op, input_t, weight, None, stride, padding, dilation, groups)
           + call(op, input, weight_t, None, stride, padding, dilation, groups))
    if bias_t is not None:
        out = out + bias_t.reshape((1, -1) + (1,) * (input.ndim - 2))
    return out


# ----- batching. An unbatched weight: the batch folds into N (B*N images).
# A batched weight (forward-mode tangents and finite differences perturb it):
# the batch folds into the groups, B*g groups of one convolution, with the
# example's channels side by side; an unbatched input is shared by all of them.
# The bias is added after, so a batched one lines up with the batch.
def _conv_folded_n(c, x, w):
    B, N = c.size, x.shape[1]
    out = c.run(input=x.reshape(B * N, *x.shape[2:]), weight=w, bias=None)
    return out.reshape(B, N, *out.shape[1:])


def _conv_folded_groups(c, x, w):
    B, g, spatial = c.size, c.env["groups"], w.ndim - 3
    Cout = w.shape[1]
    if "input" in c.batched:    # (B, N, C, ...) -> (N, B*C, ...); groups b*g + j
        x = x.movedim(0, 1).reshape(x.shape[1], -1, *x.shape[3:])
        out = c.run(input=x, weight=w.reshape(B * Cout, *w.shape[2:]), bias=None, groups=B * g)
        return out.reshape(out.shape[0], B, Cout, *out.shape[2:]).movedim(1, 0)
    # a shared input keeps its g groups; each group gets the B examples' filters
    w = w.reshape(B, g, Cout // g, *w.shape[2:]).movedim(0, 1).reshape(B * Cout, *w.shape[2:])
    out = c.run(weight=w, bias=None)
    N, O = out.shape[0], tuple(out.shape[2:])
    out = out.reshape(N, g, B, Cout // g, *O).permute(2, 0, 1, 3, *range(4, 4 + spatial))
    return out.reshape(B, N, Cout, *O)


def _conv_rule(c):
    x, w, b = c.env["input"], c.env["weight"], c.env["bias"]
    if "weight" in c.batched:
        out = _conv_folded_groups(c, x, w)
    elif "input" in c.batched:
        out = _conv_folded_n(c, x, w)
    else:       # only the bias is batched: adding it broadcasts the result
        out = c.run(bias=None)
    if b is None:
        return out
    spatial = c.rank("weight") - 2
    if "bias" in c.batched:
        return out + b.reshape(c.size, 1, -1, *(1,) * spatial)
    return out + b.reshape(-1, *(1,) * spatial)


defop("convolution", _convolution, inputs=("input", "weight", "bias"),
      promote=("input", "weight", "bias"),
      vjp={"input": _conv_vjp_input, "weight": _conv_vjp_weight,
           "bias": lambda grad: grad.sum([d for d in range(grad.ndim) if d != 1])},
      jvp=_conv_jvp, batch=_conv_rule, **C)


def _tuple(value, n, name):
    if isinstance(value, int):
        return (value,) * n
    value = tuple(int(v) for v in value)
    if len(value) == 1:
        return value * n
    if len(value) != n:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} values")
    return value


def conv_nd(n, input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """The n-d convolution (cross-correlation) of PyTorch's ``conv1d``/``conv2d``."""
    if input.ndim != n + 2:
        raise RuntimeError(f"Expected {n + 2}D (batched) input to conv{n}d, but got input of "
                           f"size: {list(input.shape)}")
    stride, dilation = _tuple(stride, n, "stride"), _tuple(dilation, n, "dilation")
    K = tuple(weight.shape[2:])
    if padding == "valid":
        pads = ((0, 0),) * n
    elif padding == "same":
        if any(s != 1 for s in stride):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        total = [d * (k - 1) for d, k in zip(dilation, K)]
        pads = tuple((t // 2, t - t // 2) for t in total)
    else:
        pads = tuple((p, p) for p in _tuple(padding, n, "padding"))
    return call(OPS["convolution"], input, weight, bias, stride, pads, dilation, groups)
