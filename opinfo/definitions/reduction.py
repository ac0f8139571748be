"""OpInfos for ``refengine/ops/reduction.py``: sum mean prod amax amin max min
logsumexp var std, over all dims, one dim, several dims, with ``keepdim``."""
from __future__ import annotations

import mpmath
import numpy as np

import adcheck.refengine as E

from .. import domains as D
from ..core import FLOATING, FLOATING_AND_COMPLEX, OpInfo, SampleInput
from ..entrywise import slicewise
from ..registry import register
from ..samples import make

FAMILY = "reduction"


def _dims(x, dim):
    if dim is None or dim == ():
        return tuple(range(x.ndim))
    return tuple(d % x.ndim for d in ((dim,) if isinstance(dim, int) else dim))


def mp_reduce(fn):
    """An mpmath reference reducing object arrays with ``fn`` (a function of a 1-D list)."""
    fn = slicewise(fn)   # (each distinct slice computed once: see opinfo.entrywise)

    def ref(x, dim=None, keepdim=False, **kwargs):
        dims = _dims(x, dim)
        moved = np.moveaxis(x, dims, tuple(range(x.ndim - len(dims), x.ndim)))
        flat = moved.reshape(moved.shape[:moved.ndim - len(dims)] + (-1,))
        out = np.empty(flat.shape[:-1], dtype=object)
        for idx in np.ndindex(out.shape):
            out[idx] = fn(list(flat[idx]), **kwargs)
        if keepdim:
            for d in dims:
                out = np.expand_dims(out, d)
        return out
    return ref


def _mp_var(values, correction=1):
    n = len(values)
    mean = mpmath.fsum(values) / n
    return mpmath.fsum(abs(v - mean) ** 2 for v in values) / (n - correction)


def _reduce_samples(dims=(None, 1, (0, 2), -1), keepdims=(False, True), shape=(2, 3, 2),
                    domain=D.REAL, scalar=True, **kwargs):
    def sample_func(opinfo, dtype):
        for dim in dims:
            for keepdim in keepdims:
                kw = dict(kwargs) if dim is None else {"dim": dim, "keepdim": keepdim, **kwargs}
                yield SampleInput(make(shape, domain), kwargs=kw,
                                  name=f"dim={dim} keepdim={keepdim}")
                if dim is None:
                    break
        if scalar:
            yield SampleInput(make((), domain), kwargs=dict(kwargs), name="scalar")
    return sample_func


register(OpInfo("sum", E.sum, family=FAMILY, torch_name="sum",
                ref=lambda x, dim=None, keepdim=False: np.sum(x, axis=dim, keepdims=keepdim),
                mpmath_ref=mp_reduce(mpmath.fsum), dtypes=FLOATING_AND_COMPLEX,
                sample_func=_reduce_samples()))
register(OpInfo("mean", E.mean, family=FAMILY, torch_name="mean",
                ref=lambda x, dim=None, keepdim=False: np.mean(x, axis=dim, keepdims=keepdim),
                mpmath_ref=mp_reduce(lambda v: mpmath.fsum(v) / len(v)),
                dtypes=FLOATING_AND_COMPLEX, sample_func=_reduce_samples()))


def _prod_samples(opinfo, dtype):
    yield from _reduce_samples(dims=(None, 1, 0), shape=(3, 4))(opinfo, dtype)
    yield SampleInput(make((2, 3), values=((1.5, 0.0, 2.0), (0.0, 0.0, -1.0))),
                      kwargs={"dim": 1}, name="one and two zeros in a slice")
    yield SampleInput(make((4,), values=(1.5, 0.0, 2.0, -0.5)), name="one zero")


def _prod_zeros(opinfo, dtype):
    rule = "the gradient of an entry is the product of the others, zeros included"
    yield SampleInput(make((4,), values=(1.5, 0.0, 2.0, -0.5)), name="one zero", rule=rule)
    yield SampleInput(make((2, 3), values=((1.5, 0.0, 2.0), (0.0, 0.0, -1.0))),
                      kwargs={"dim": 1}, name="one and two zeros in a slice", rule=rule)


register(OpInfo("prod", E.prod, family=FAMILY, torch_name="prod",
                ref=lambda x, dim=None, keepdim=False: np.prod(x, axis=dim, keepdims=keepdim),
                mpmath_ref=mp_reduce(mpmath.fprod), dtypes=FLOATING_AND_COMPLEX,
                sample_func=_prod_samples, special_func=_prod_zeros))


def _tie_samples(with_dim: bool):
    def sample_func(opinfo, dtype):
        x = make((2, 4), values=((1.0, 3.0, 3.0, 2.0), (-1.0, -1.0, 0.5, -1.0)))
        rule = "tied extrema share the gradient evenly"
        if with_dim:
            yield SampleInput(x, kwargs={"dim": 1}, name="ties along dim 1", rule=rule)
        yield SampleInput(make((4,), values=(1.0, 3.0, 3.0, 2.0)), name="ties, all dims", rule=rule)
    return sample_func


for _name, _np, _mp in (("amax", np.max, max), ("amin", np.min, min)):
    register(OpInfo(_name, getattr(E, _name), family=FAMILY, torch_name=_name,
                    ref=lambda x, dim=(), keepdim=False, _np=_np:
                    _np(x, axis=None if dim == () else dim, keepdims=keepdim),
                    mpmath_ref=mp_reduce(_mp), dtypes=FLOATING,
                    sample_func=_reduce_samples(dims=((), 1, (0, 2), -1)),
                    special_func=_tie_samples(True)))


def _values(result):
    """The values of a ``(values, indices)`` result."""
    return result[0]


def _max_samples(opinfo, dtype):
    yield SampleInput(make((2, 3, 2)), name="all dims")
    yield SampleInput(make(()), name="scalar")
    for dim, keepdim in ((1, False), (-1, True), (0, False)):
        yield SampleInput(make((2, 3, 2)), args=(dim,), kwargs={"keepdim": keepdim},
                          output_process_fn_grad=_values, name=f"dim={dim} keepdim={keepdim}")


def _extremum_ties(name: str):
    """Ties for ``max``/``min``: over all dims (shared evenly) and along a dim (to the
    returned index). The dim sample has a tie in its first row, which the
    former one ([-1, -2, -1, 2] along dim 0, labelled min for max) did not."""
    sign = 1.0 if name == "max" else -1.0

    def sample_func(opinfo, dtype):
        yield SampleInput(make((4,), values=tuple(sign * v for v in (1.0, 3.0, 3.0, 2.0))),
                          name="ties, all dims",
                          rule=f"{name}() over all dims shares the gradient evenly among ties")
        rows = ((3.0, -2.0, 3.0, 2.0), (1.0, 1.0, 0.0, -1.0))
        yield SampleInput(make((2, 4), values=tuple(tuple(sign * v for v in r) for r in rows)),
                          args=(1,), name="dim, ties", output_process_fn_grad=_values,
                          rule=f"{name}(dim) sends the gradient to the index it returns")
    return sample_func


for _name in ("max", "min"):
    register(OpInfo(_name, getattr(E, _name), family=FAMILY, torch_name=_name,
                    dtypes=FLOATING, sample_func=_max_samples, special_func=_extremum_ties(_name)))


def _np_logsumexp(x, dim, keepdim=False):
    m = np.max(x.real, axis=dim, keepdims=True)
    out = np.log(np.sum(np.exp(x - m), axis=dim, keepdims=True)) + m
    return out if keepdim else np.squeeze(out, axis=dim)


register(OpInfo("logsumexp", E.logsumexp, family=FAMILY, torch_name="logsumexp",
                ref=_np_logsumexp,
                mpmath_ref=mp_reduce(lambda v: mpmath.log(mpmath.fsum(mpmath.exp(a) for a in v))),
                dtypes=FLOATING_AND_COMPLEX,   # torch differentiates complex logsumexp too
                sample_func=_reduce_samples(dims=(1, (0, 2), -1), scalar=False)))
register(OpInfo("var", E.var, family=FAMILY, torch_name="var",
                ref=lambda x, dim=None, correction=1, keepdim=False:
                np.var(x, axis=dim, ddof=correction, keepdims=keepdim),
                mpmath_ref=mp_reduce(_mp_var), dtypes=FLOATING_AND_COMPLEX,
                sample_func=_reduce_samples(scalar=False)))
register(OpInfo("var_correction0", E.var, family=FAMILY, torch_name="var",
                ref=lambda x, dim=None, correction=1, keepdim=False:
                np.var(x, axis=dim, ddof=correction, keepdims=keepdim),
                mpmath_ref=mp_reduce(_mp_var), dtypes=FLOATING_AND_COMPLEX,
                sample_func=_reduce_samples(dims=(None, 1), scalar=False, correction=0),
                description="var with correction=0 (the biased estimator)"))
register(OpInfo("std", E.std, family=FAMILY, torch_name="std",
                ref=lambda x, dim=None, correction=1, keepdim=False:
                np.std(x, axis=dim, ddof=correction, keepdims=keepdim),
                mpmath_ref=mp_reduce(lambda v, correction=1: mpmath.sqrt(_mp_var(v, correction))),
                dtypes=FLOATING_AND_COMPLEX, sample_func=_reduce_samples(scalar=False)))
