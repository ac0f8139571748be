"""Reductions over ``dim`` (with ``keepdim``): sum, mean, prod, amax, max, var, norm...

Every vjp first restores the reduced dimensions of ``grad`` (``expand_reduced``),
then applies its own formula; ties in max-like reductions share the gradient
evenly, as PyTorch does.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from .. import dtypes
from ..batching.batched import NotBatchable
from ..batching.rules import over_dims, reduction
from .dispatch import call
from .layout import c_order
from .opdef import OPS, defop, deflinear, no_complex, public


def dims_of(dim, ndim: int) -> tuple:
    """``dim`` (None, int or sequence) as a sorted tuple of non-negative dims."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(ndim))
    if isinstance(dim, (int, np.integer)):
        dim = (dim,)
    out = []
    for d in dim:
        d = int(d)
        if not -max(ndim, 1) <= d < max(ndim, 1):
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[{-max(ndim, 1)}, {max(ndim, 1) - 1}], but got {d})")
        out.append(d % max(ndim, 1))
    return tuple(sorted(set(out))) if ndim else ()


def _np_axis(dim, ndim):
    return dims_of(dim, ndim) if ndim else None


def expand_reduced(grad, self, dim, keepdim: bool):
    """``grad`` of a reduction, broadcast back to ``self``'s shape (a shape or a tensor)."""
    shape = tuple(self if isinstance(self, tuple) else self.shape)
    if not keepdim and shape:
        dims = dims_of(dim, len(shape))
        # reduced dims ahead of the first kept one need no unsqueeze, expand prepends
        # them (torch's sum backward of every dim is one expand of the 0-dim grad)
        lead = 0
        while lead < len(shape) and lead in dims:
            lead += 1
        for d in dims:
            if d > lead:
                grad = grad.unsqueeze(d - lead)
    return grad.expand(shape)


def _count(self, dim) -> int:
    shape = tuple(self if isinstance(self, tuple) else self.shape)
    n = 1
    for d in dims_of(dim, len(shape)):
        n *= shape[d]
    return n


def _variant(base: str, full: str, with_dim: str):
    return lambda raw: f"{base}Backward{full if raw.get('dim') is None else with_dim}"


deflinear("sum", lambda self, dim=None, keepdim=False: np.sum(self, axis=_np_axis(dim, self.ndim),
                                                             keepdims=keepdim),
          vjp={"self": lambda grad, self_shape, dim, keepdim: expand_reduced(grad, self_shape, dim, keepdim)},
          promote=("self",), result_dtype=lambda d: dtypes.int64 if d._category < 2 else d,
          variant=_variant("Sum", "0", "1"), layout=c_order, batch=reduction())
deflinear("mean", lambda self, dim=None, keepdim=False: np.mean(self, axis=_np_axis(dim, self.ndim),
                                                               keepdims=keepdim),
          vjp={"self": lambda grad, self_shape, dim, keepdim:
               expand_reduced(grad, self_shape, dim, keepdim) / _count(self_shape, dim)},
          promote=("self",), variant=_variant("Mean", "0", "1"), layout=c_order, batch=reduction())


def _prod_others(self, dim):
    """For each element, the product of the others in its slice.

    Computed as the product of ``n`` copies of the slice, copy ``i`` with
    element ``i`` replaced by 1: exact at zeros (any number of them) and
    differentiable again, unlike ``result / self``. O(n^2), fine here.
    """
    from .. import creation
    if self.ndim == 0:
        return creation.ones_like(self)
    if dim is None:
        return _prod_others(self.reshape(-1), 0).reshape(tuple(self.shape))
    d = int(dim) % self.ndim
    n = self.shape[d]
    if n == 1 and not np.all(self._data):
        # torch's rule for slices of one element where the input holds a zero: the
        # gradient is grad itself, with no graph through the input (without a zero,
        # grad * result / input keeps one): the same values, and the same flags
        return creation.ones_like(self.detach())
    mask = np.eye(n, dtype=bool).reshape((n,) + (1,) * d + (n,) + (1,) * (self.ndim - d - 1))
    others = self.unsqueeze(0).masked_fill(creation.tensor(mask), 1).prod(d + 1)
    return others.movedim(0, d)


def _prod_forward(self, dim=None, keepdim=False):
    return np.prod(self, axis=None if dim is None else int(dim), keepdims=keepdim)


defop("prod", _prod_forward,
      # ``result`` is saved (as torch's ProdBackward saves it), so writing the
      # product in place makes backward fail as in torch, though the rule does not read it
      vjp={"self": lambda grad, self, dim, keepdim, result:
           expand_reduced(grad, self, dim, keepdim) * _prod_others(self, dim).conj()},
      jvp=lambda self_t, self, dim, keepdim: (self_t * _prod_others(self, dim)).sum(
          dim=dim, keepdim=keepdim),
      promote=("self",), result_dtype=lambda d: dtypes.int64 if d._category < 2 else d,
      variant=_variant("Prod", "0", "1"), layout=c_order, batch=reduction(int_dim=True))


def _evenly(grad, self, result, dim, keepdim):
    """The gradient of a max-like value, shared evenly among the tied elements."""
    mask = (self == expand_reduced(result, self, dim, keepdim)).to(self.dtype)
    count = mask.sum(dim=dim, keepdim=True)
    return expand_reduced(grad, self, dim, keepdim) * mask / count


def _evenly_jvp(self_t, self, result, dim, keepdim):
    # torch's amaxamin_jvp: the tangents of the maxima picked by a mask (where,
    # not a product: an inf tangent of an element that is not a maximum is no NaN)
    mask = self == expand_reduced(result, self, dim, keepdim)
    picked = call(OPS["where"], mask, self_t, 0)
    return picked.sum(dim=dim, keepdim=keepdim) / mask.to(self.dtype).sum(dim=dim, keepdim=keepdim)


def _no_empty(name: str, self) -> None:
    if self.size == 0:
        raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() "
                           "== 0. Specify the reduction dim with the 'dim' argument.")


def _no_empty_dim(name: str, self, dims, normalise: bool) -> None:
    # torch names the first empty dim in the order given: as given by amax,
    # made non-negative by max(dim)
    for d in (dims if isinstance(dims, (tuple, list)) else (dims,)):
        d = int(d)
        if -self.ndim <= d < max(self.ndim, 1) and self.ndim and self.shape[d] == 0:
            shown = d % self.ndim if normalise else d
            raise IndexError(f"{name}(): Expected reduction dim {shown} to have non-zero size.")


def _amax(fn, name):
    def forward(self, dim=(), keepdim=False):
        if dim == () or dim is None:
            _no_empty(name, self)
        elif self.size == 0:
            _no_empty_dim(name, self, dim, normalise=False)
        return fn(self, axis=_np_axis(dim, self.ndim) if dim != () else None, keepdims=keepdim)
    return forward


def _all(fn, name):
    def forward(self):
        _no_empty(name, self)
        return fn(self)
    return forward


# Max-like reductions order their input: complex numbers are refused, as in PyTorch.
for _name, _fn in (("amax", np.max), ("amin", np.min)):
    defop(_name, _amax(_fn, _name), vjp={"self": _evenly}, jvp=_evenly_jvp, refuse=no_complex(_name),
          layout=c_order, batch=reduction())


def _all_dims_batch(amax: str):
    """max() over every dim, batched: ``amax`` over each example's dims, which
    shares the gradient among ties evenly too (max(dim) would pick one)."""
    def rule(c):
        x, rank = c.env["self"], c.rank("self")
        if x.is_complex():
            raise NotBatchable("complex input: the loop raises max's own error")
        if rank == 0:
            x = x.unsqueeze(1)      # a 0-d example: its one element, in a size-1 dim
        return c.run(OPS[amax], self=x, dim=tuple(range(1, max(rank, 1) + 1)))
    return rule


def _evenly_all(grad, self, result):
    """The gradient of max() or min() of a whole tensor, torch's rule: shared
    evenly among the elements equal to the result, or among the NaN elements
    when the result is NaN; exactly 0 elsewhere (also for an inf gradient)."""
    mask = self.isnan() if bool(result.isnan()) else self == result
    return call(OPS["where"], mask, grad / mask.sum(), 0)


def _evenly_read_jvp(self_t, self, result):
    """max() and min() of a whole tensor, torch's evenly_read_jvp: the tangent shared
    over the maxima by a product with the mask (a NaN tangent elsewhere is NaN)."""
    mask = (self == result).to(self.dtype)
    return (mask * (self_t / mask.sum())).sum()


for _name, _fn in (("max", np.max), ("min", np.min)):
    defop(f"{_name}_all", _all(_fn, _name),
          vjp={"self": _evenly_all},
          jvp=_evenly_read_jvp,
          node=f"{_name.capitalize()}Backward1", method=None, function=False,
          refuse=no_complex(_name), batch=_all_dims_batch(f"a{_name}"))


def _select_by_index(grad, self, indices, dim, keepdim):
    # max(dim) picks one element per slice: its gradient goes there only.
    from .. import creation
    g = grad if keepdim else grad.unsqueeze(dim)
    idx = indices if keepdim else indices.unsqueeze(dim)
    return creation.zeros_like(self).scatter(dim, idx, g)


def _max_dim_fn(arg, name):
    def forward(self, dim, keepdim=False):
        if self.size == 0:
            _no_empty_dim(name, self, dim, normalise=True)
        idx = arg(self, axis=int(dim), keepdims=True)
        values = np.take_along_axis(self, idx, axis=int(dim))
        if not keepdim:
            values, idx = np.squeeze(values, int(dim)), np.squeeze(idx, int(dim))
        return values, idx.astype(np.int64)
    return forward


for _name, _arg in (("max_dim", np.argmax), ("min_dim", np.argmin)):
    defop(_name, _max_dim_fn(_arg, _name[:3]),
          vjp={"self": lambda grad, self, indices, dim, keepdim:
               _select_by_index(grad, self, indices, dim, keepdim)},
          jvp=lambda self_t, indices, dim, keepdim: self_t.gather(
              dim, indices if keepdim else indices.unsqueeze(dim)).squeeze(dim)
          if not keepdim else self_t.gather(dim, indices),
          outputs=("values", "indices"), diff_outputs=("values",),
          node=f"{_name[:3].capitalize()}Backward0", method=None, function=False,
          refuse=no_complex(_name[:3]), layout=c_order, batch=over_dims("dim"))


class return_types:
    """Named tuples returned by ``max(dim)`` and ``min(dim)``."""
    from collections import namedtuple
    max = namedtuple("max", ["values", "indices"])
    min = namedtuple("min", ["values", "indices"])


def _extremum(kind: str):
    def fn(input, dim=None, keepdim=False, *, other=None):
        from ..tensor import Tensor
        if isinstance(dim, Tensor):
            return call(OPS["maximum" if kind == "max" else "minimum"], input, dim)
        if dim is None:
            return call(OPS[f"{kind}_all"], input)
        values, indices = call(OPS[f"{kind}_dim"], input, dim, keepdim)
        return getattr(return_types, kind)(values, indices)
    fn.__name__ = kind
    fn.__doc__ = (f"``{kind}(input)`` the {kind}imum (ties share the gradient); "
                  f"``{kind}(input, dim)`` the named tuple (values, indices); "
                  f"``{kind}(input, other)`` the elementwise {kind}imum.")
    return fn


public("max")(_extremum("max"))
public("min")(_extremum("min"))


def _logsumexp(self, dim, keepdim=False):
    axis = _np_axis(dim, self.ndim)
    # an empty slice sums to 0, whose log is -inf, as in torch (its max has no identity)
    m = np.max(self.real if np.iscomplexobj(self) else self, axis=axis, keepdims=True,
               initial=-np.inf)
    m = np.where(np.isfinite(m), m, 0)
    out = np.log(np.sum(np.exp(self - m), axis=axis, keepdims=True)) + m
    return out if keepdim else np.squeeze(out, axis=axis)


defop("logsumexp", _logsumexp,
      vjp={"self": lambda grad, self, result, dim, keepdim:
           expand_reduced(grad, self, dim, keepdim) *
           (self - expand_reduced(result, self, dim, keepdim)).exp().conj()},
      jvp=lambda self_t, self, result, dim, keepdim:
      (self_t * (self - expand_reduced(result, self, dim, keepdim)).exp()).sum(dim=dim, keepdim=keepdim),
      promote=("self",), to_float=True, layout=c_order, batch=reduction())


def _degenerate(fn, name: str, self, dim, correction, keepdim):
    """``fn`` (np.var or np.std), with PyTorch's warning where count <= correction.

    NumPy then divides by max(0, count - correction), as PyTorch does: inf,
    or nan where every entry is the mean.
    """
    axis = _np_axis(dim, self.ndim)
    if _count(self, dim) - correction > 0:
        return fn(self, axis=axis, ddof=correction, keepdims=keepdim)
    warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly less "
                  "than the reduction factor (input numel divided by output numel).",
                  UserWarning, stacklevel=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)    # NumPy's own warning
        return fn(self, axis=axis, ddof=correction, keepdims=keepdim)


def _var_forward(self, dim=None, correction=1, keepdim=False):
    return _degenerate(np.var, "var", self, dim, correction, keepdim)


def _centered(self, dim):
    return self - self.mean(dim=dims_of(dim, self.ndim), keepdim=True)


def _var_direction(self, dim, correction):
    """D with d(var) = sum Re(conj(D) dx), as PyTorch computes it.

    Where the count does not exceed the correction, 2 / (count - correction)
    is inf (count equal) or negative; PyTorch's full reduction then gives
    inf with the sign of grad (nan where an entry is the mean), and its
    reduction over given dims uses the division as it is.
    """
    dof = _count(self, dim) - correction
    centered = _centered(self, dim)
    if dof > 0:
        return centered * (2.0 / dof)
    if dim is None or self.ndim == 0:
        return (centered * math.inf).abs()
    return centered * (2.0 / dof if dof else math.inf)


defop("var", _var_forward,
      vjp={"self": lambda grad, self, dim, correction, keepdim:
           expand_reduced(grad, self, dim, keepdim) * _var_direction(self, dim, correction)},
      jvp=lambda self_t, self, dim, correction, keepdim:
      (self_t * _var_direction(self, dim, correction).conj()).real.sum(dim=dim, keepdim=keepdim),
      promote=("self",), to_float=True, result_dtype=dtypes.to_real, layout=c_order,
      batch=reduction())


def _std_forward(self, dim=None, correction=1, keepdim=False):
    return _degenerate(np.std, "std", self, dim, correction, keepdim)


defop("std", _std_forward,
      # grad / (2 std) masked to 0 where std is 0, as torch computes it: 0 there even
      # for an infinite grad, and a double backward through it NaN (0 * inf), as torch's
      vjp={"self": lambda grad, self, result, dim, correction, keepdim:
           expand_reduced((grad / (result * 2)).masked_fill(result == 0, 0), self,
                          dim, keepdim) * _var_direction(self, dim, correction)},
      # the same masked division, as torch: 0 where std is 0 even for a NaN tangent
      jvp=lambda self_t, self, result, dim, correction, keepdim:
      ((self_t * _var_direction(self, dim, correction).conj()).real.sum(dim=dim, keepdim=keepdim)
       / (result * 2)).masked_fill(result == 0, 0),
      promote=("self",), to_float=True, result_dtype=dtypes.to_real, layout=c_order,
      batch=reduction())
