"""Cumulative ops along ``dim``: cumsum (linear) and cumprod.

cumsum's vjp is the reversed cumulative sum, an op of its own (not public):
one sum over a reversed view of the gradient, where ``flip``, ``cumsum`` and
``flip`` again make three arrays; its vjp is cumsum. For cumprod, with
``P[i, k] = prod_{j <= k, j != i} x_j`` for ``k >= i`` (and 0 for k < i),
``d out_k = sum_i P[i, k] dx_i``: P is built as the cumulative product of
``n`` copies of the slice with element ``i`` of copy ``i`` set to 1, which
is exact at zeros and differentiable again (O(n^2), fine for a reference).
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..batching.rules import along_dim
from .dispatch import call
from .layout import c_order
from .opdef import OPS, deflinear, defop


def _scan(fn):
    def forward(self, dim, dtype=None):
        x = self.astype(dtype.np) if dtype is not None else self
        if x.dtype.kind in "bui":
            x = x.astype(np.int64)
        # torch's scans write a contiguous result whatever the input's strides
        return np.ascontiguousarray(fn(x, axis=int(dim) % max(x.ndim, 1))) if x.ndim else x.copy()
    return forward


def _reversed_cumsum(self, dim):
    # (a view of the one array the sum makes: the sum reads its input backwards)
    if not self.ndim:
        return self.copy()
    axis = int(dim) % self.ndim
    return np.flip(np.cumsum(np.flip(self, axis), axis=axis), axis)


_INT = dict(promote=("self",), inplace=True, batch=along_dim(), layout=c_order,
            result_dtype=lambda d: dtypes.int64 if d._category < 2 else d)
deflinear("cumsum", _scan(np.cumsum),
          vjp={"self": lambda grad, dim: call(OPS["reversed_cumsum"], grad, dim)
               if grad.ndim else grad},
          **_INT)
deflinear("reversed_cumsum", _reversed_cumsum, vjp={"self": lambda grad, dim: grad.cumsum(dim)},
          batch=along_dim(), layout=c_order, function=False, method=None)


def _below_diagonal(n: int):
    """The mask of k < i in an (n_i, n_k) matrix: outputs before input i."""
    from .. import creation
    return creation.tensor(np.tril(np.ones((n, n), dtype=bool), -1))


def _cumprod_partials(self, dim):
    """P with the slice along ``dim`` moved last: shape (..., n_i, n_k)."""
    from .. import creation
    x = self.movedim(dim, -1)
    n = x.shape[-1]
    eye = creation.tensor(np.eye(n, dtype=bool))
    P = x.unsqueeze(-2).expand(tuple(x.shape[:-1]) + (n, n)).masked_fill(eye, 1).cumprod(-1)
    # zero below the diagonal by a mask, not a product: a NaN or inf later in the
    # slice must not reach the partials of earlier outputs
    return P.masked_fill(_below_diagonal(n), 0)


def _cumprod_vjp(grad, self, dim, result):
    # ``result`` is not needed, but PyTorch saves it: an in-place write to the
    # output of cumprod then makes backward fail, as in torch
    del result
    if self.numel() <= 1 or self.shape[dim] == 1:
        return grad         # torch's shortcuts: the gradient itself, no graph to the input
    P = _cumprod_partials(self, dim)
    # input i reaches outputs k >= i only: a NaN or inf gradient of an earlier
    # output is masked out of its sum, not multiplied by P's zero
    terms = P.conj() * grad.movedim(dim, -1).unsqueeze(-2)
    return terms.masked_fill(_below_diagonal(P.shape[-1]), 0).sum(-1).movedim(-1, dim)


def _cumprod_jvp(self_t, self, dim):
    if self.ndim == 0:
        return self_t
    P = _cumprod_partials(self, dim)
    # output k reads inputs i <= k only: a NaN tangent of a later input is masked
    terms = P * self_t.movedim(dim, -1).unsqueeze(-1)
    return terms.masked_fill(_below_diagonal(P.shape[-1]), 0).sum(-2).movedim(-1, dim)


defop("cumprod", _scan(np.cumprod), vjp={"self": _cumprod_vjp}, jvp=_cumprod_jvp, **_INT)
