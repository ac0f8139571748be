"""Norms: ``linalg.vector_norm`` (one op, every ``ord``), and the composites
``linalg.matrix_norm``, ``linalg.norm`` and ``torch.norm``.

With ``r = (sum |x|^p)^(1/p)``, ``dr = r^(1-p) sum |x|^(p-1) Re(conj(sgn x) dx)``,
so the vjp is ``grad sgn(x) |x|^(p-1) / r^(p-1)``. Where the norm is 0 the
gradient is 0 (the minimum-norm subgradient; PyTorch masks it); for p < 1
the entries at 0 get 0; inf/-inf share the gradient evenly among ties; the
0-"norm" (a count) has zero derivative: no gradient at all in reverse mode (as
in PyTorch, the input gets None) and a zero tangent, also at inf inputs.
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from ..batching.rules import reduction
from .dispatch import call
from .layout import c_order
from .linalg import L
from .opdef import OPS, defop, public
from .reduction import _np_axis, expand_reduced


def _vector_norm(self, ord=2, dim=None, keepdim=False):
    a = np.abs(self)
    axis = _np_axis(dim, self.ndim)
    if ord == math.inf:
        return np.max(a, axis=axis, keepdims=keepdim)
    if ord == -math.inf:
        return np.min(a, axis=axis, keepdims=keepdim)
    if ord == 0:
        return np.sum(a != 0, axis=axis, keepdims=keepdim).astype(a.dtype)
    if ord == 1:
        return np.sum(a, axis=axis, keepdims=keepdim)
    if ord == 2:
        return np.sqrt(np.sum(a * a, axis=axis, keepdims=keepdim))
    return np.sum(a ** ord, axis=axis, keepdims=keepdim) ** (1.0 / ord)


def _norm_direction(self, result, ord, dim, keepdim):
    """D with d(norm) = sum Re(conj(D) dx): the gradient for grad = 1."""
    r = expand_reduced(result, self, dim, keepdim)
    a = self.abs()
    if ord in (math.inf, -math.inf):
        tie = (a == r).to(a.dtype)
        return self.sgn() * tie / tie.sum(dim=dim, keepdim=True)
    if ord == 0:
        return self.new_zeros(self.shape)   # not self * 0: nan at inf
    if ord == 1:
        return self.sgn()
    if ord == 2:
        return self / r.masked_fill(r == 0, 1) * (r != 0).to(a.dtype)
    scaled = self.sgn() * a.masked_fill(a == 0, 1).pow(ord - 1) * (a != 0).to(a.dtype)
    return scaled / r.masked_fill(r == 0, 1).pow(ord - 1) * (r != 0).to(a.dtype)


def _norm_jvp(self_t, self, result, ord, dim, keepdim):
    t = (self_t * _norm_direction(self, result, ord, dim, keepdim).conj()).real.sum(
        dim=dim, keepdim=keepdim)
    # torch sets the 2-norm's tangent to 0 where the norm is 0, a NaN tangent included
    return t.masked_fill(result == 0, 0) if ord == 2 else t


defop("linalg_vector_norm", _vector_norm, promote=("self",), to_float=True,
      result_dtype=dtypes.to_real,
      vjp={"self": lambda grad, self, result, ord, dim, keepdim: None if ord == 0 else
           expand_reduced(grad, self, dim, keepdim) * _norm_direction(self, result, ord, dim, keepdim)},
      jvp=lambda self_t, self, result, ord, dim, keepdim: _norm_jvp(self_t, self, result, ord, dim,
                                                                   keepdim),
      layout=c_order, batch=reduction(), **L)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """The vector ``ord``-norm over ``dim`` (all elements when ``None``)."""
    if dtype is not None:
        x = x.to(dtype)
    if isinstance(dim, list):
        dim = tuple(dim)
    return call(OPS["linalg_vector_norm"], x, float(ord), dim, keepdim)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """The matrix norm: 'fro', 'nuc', 2, -2 (singular values), 1, -1, inf, -inf."""
    from .linalg_decompositions import svdvals
    if dtype is not None:
        A = A.to(dtype)
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    d0, d1 = (d % A.ndim for d in dim)
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim)
    if ord in ("nuc", 2, -2):
        S = svdvals(A.movedim((d0, d1), (-2, -1)))
        out = S.sum(-1) if ord == "nuc" else S.amax(-1) if ord == 2 else S.amin(-1)
        return _keep(out, (d0, d1), keepdim)
    if ord in (1, -1, math.inf, -math.inf):
        inner, outer = (d0, d1) if ord in (1, -1) else (d1, d0)
        sums = vector_norm(A, 1, inner, True)
        out = sums.amax(outer, keepdim=True) if ord > 0 else sums.amin(outer, keepdim=True)
        return out if keepdim else out.squeeze((d0, d1))
    raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")


def _keep(out, dims, keepdim):
    if not keepdim:
        return out
    for d in sorted(dims):
        out = out.unsqueeze(d)
    return out


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """``linalg.norm``: a vector norm for 1 dim, a matrix norm for 2 (see PyTorch)."""
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None and len(dim) == 2 or (dim is None and ord is not None and A.ndim == 2):
        return matrix_norm(A, "fro" if ord is None else ord, dim or (-2, -1), keepdim, dtype=dtype)
    if ord is not None and dim is None and A.ndim != 1:
        raise RuntimeError("linalg.norm: If dim is not specified but ord is, the input must be "
                           f"1D or 2D. Got {A.ndim}D.")
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


@public("norm")
def torch_norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """PyTorch's ``torch.norm(input, p, dim, keepdim)``: 'fro', 'nuc' or a vector p-norm."""
    if isinstance(dim, int):
        dim = (dim,)
    if p == "nuc":
        return matrix_norm(input, "nuc", dim or (-2, -1), keepdim, dtype=dtype)
    if p == "fro" or p is None:
        p = 2
    return vector_norm(input, p, dim, keepdim, dtype=dtype)
