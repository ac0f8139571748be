"""OpInfos for ``refengine/ops/shape.py``: views (view reshape transpose t permute
expand squeeze unsqueeze select narrow diagonal movedim flatten unflatten) and
the copies (clone cat stack)."""
from __future__ import annotations

import numpy as np

import adcheck.refengine as E

from ..core import FLOATING_AND_COMPLEX, OpInfo, SampleInput
from ..registry import register
from ..samples import make

FAMILY = "shape"


def _calls(*calls):
    """Samples from ``(input shape, args, kwargs)`` triples."""
    def sample_func(opinfo, dtype):
        for shape, args, kwargs in calls:
            yield SampleInput(make(shape), args=tuple(args), kwargs=dict(kwargs),
                              name=f"{shape} args={args} kwargs={kwargs}")
    return sample_func


def _method(name):
    def call(x, *args, **kwargs):
        return getattr(x, name)(*args, **kwargs)
    call.__name__ = name
    return call


def _np_expand(x, sizes):
    lead = len(sizes) - x.ndim
    return np.broadcast_to(x, tuple(x.shape[i - lead] if n == -1 else n
                                    for i, n in enumerate(sizes))).copy()


def _def(name, op, calls, ref=None, torch_name=None):
    register(OpInfo(name, op, family=FAMILY, torch_name=torch_name or name, ref=ref,
                    dtypes=FLOATING_AND_COMPLEX, sample_func=_calls(*calls)))


_def("view", _method("view"), (((2, 3), ((3, 2),), {}), ((2, 3), (-1,), {}), ((), (1, 1), {}),
                              ((0, 2), (2, 0), {})),
     ref=lambda x, *s: x.reshape(*s), torch_name="Tensor.view")
_def("reshape", E.reshape, (((2, 3), ((3, 2),), {}), ((2, 3, 2), ((-1, 4),), {}), ((), ((1,),), {})),
     ref=lambda x, *s: np.reshape(x, s[0] if len(s) == 1 else s))
_def("transpose", E.transpose, (((2, 3), (0, 1), {}), ((2, 3, 2), (-1, 0), {})),
     ref=lambda x, a, b: np.swapaxes(x, a, b))
_def("swapdims", E.swapdims, (((2, 3), (0, 1), {}), ((2, 3, 2), (-1, 0), {})),
     ref=lambda x, a, b: np.swapaxes(x, a, b))
_def("swapaxes", E.swapaxes, (((2, 3), (1, 0), {}), ((2, 3, 2), (0, -1), {})),
     ref=lambda x, a, b: np.swapaxes(x, a, b))
_def("t", E.t, (((2, 3), (), {}), ((3,), (), {}), ((), (), {})), ref=lambda x: x.T)
_def("permute", E.permute, (((2, 3, 2), ((2, 0, 1),), {}), ((2, 3), ((1, 0),), {})),
     ref=lambda x, *d: np.transpose(x, d[0] if len(d) == 1 else d))
_def("expand", _method("expand"), (((3, 1), (3, 4), {}), ((3,), (2, 3), {}), ((), (2, 2), {}),
                                  ((1, 2), (-1, 2), {})),
     ref=lambda x, *s: _np_expand(x, s), torch_name="Tensor.expand")
_def("squeeze", E.squeeze, (((2, 1, 3), (), {}), ((2, 1, 3), (1,), {}), ((1,), (0,), {}),
                            ((2, 3), (0,), {})), ref=None)
_def("unsqueeze", E.unsqueeze, (((2, 3), (1,), {}), ((), (0,), {}), ((2, 3), (-1,), {})),
     ref=np.expand_dims)
_def("select", E.select, (((2, 3), (1, 2), {}), ((3,), (0, -1), {}), ((2, 3, 2), (-1, 0), {})),
     ref=lambda x, d, i: np.take(x, i, axis=d))
_def("narrow", E.narrow, (((3, 4), (1, 1, 2), {}), ((5,), (0, 0, 5), {}), ((3, 4), (0, 2, 0), {})))
_def("diagonal", E.diagonal, (((3, 3), (), {}), ((3, 4), (1,), {}), ((2, 3, 3), (0, 1, 2), {}),
                              ((3, 4), (-1,), {})),
     ref=lambda x, offset=0, dim1=0, dim2=1: np.diagonal(x, offset, dim1, dim2).copy())
_def("movedim", E.movedim, (((2, 3, 2), (0, 2), {}), ((2, 3, 2), ((0, 1), (2, 0)), {})),
     ref=np.moveaxis)
_def("flatten", E.flatten, (((2, 3, 2), (), {}), ((2, 3, 2), (1,), {}), ((), (), {})))
_def("unflatten", E.unflatten, (((2, 6), (1, (2, 3)), {}), ((6,), (0, (3, -1)), {})))
_def("clone", E.clone, (((2, 3), (), {}), ((), (), {}), ((0,), (), {})), ref=np.copy)


def _list_samples(opinfo, dtype):
    yield SampleInput([make((2, 3)), make((1, 3))], name="dim 0, different sizes")
    yield SampleInput([make((2, 3)), make((2, 2)), make((2, 1))], args=(1,), name="dim 1")
    yield SampleInput([make((2,)), make((0,))], name="with an empty tensor")


def _stack_samples(opinfo, dtype):
    yield SampleInput([make((2, 3)), make((2, 3))], name="dim 0")
    yield SampleInput([make((2, 3)), make((2, 3)), make((2, 3))], args=(2,), name="dim 2")
    yield SampleInput([make(()), make(())], name="scalars")


register(OpInfo("cat", E.cat, family=FAMILY, torch_name="cat",
                ref=lambda xs, dim=0: np.concatenate(xs, axis=dim), dtypes=FLOATING_AND_COMPLEX,
                sample_func=_list_samples))
register(OpInfo("stack", E.stack, family=FAMILY, torch_name="stack",
                ref=lambda xs, dim=0: np.stack(xs, axis=dim), dtypes=FLOATING_AND_COMPLEX,
                sample_func=_stack_samples))
_def("tril", E.tril, (((3, 3), (), {}), ((3, 4), (1,), {}), ((2, 3, 2), (-1,), {}), ((0, 2), (), {})),
     ref=lambda x, diagonal=0: np.tril(x, diagonal))
_def("triu", E.triu, (((3, 3), (), {}), ((3, 4), (1,), {}), ((2, 3, 2), (-1,), {}), ((0, 2), (), {})),
     ref=lambda x, diagonal=0: np.triu(x, diagonal))


def _as_samples(pairs):
    """``view_as``/``expand_as`` samples: the other tensor only lends its shape."""
    def sample_func(opinfo, dtype):
        for shape, other in pairs:
            yield SampleInput(make(shape), args=(make(other, requires_grad=False),),
                              name=f"{shape} as {other}")
    return sample_func


register(OpInfo("view_as", _method("view_as"), family=FAMILY, torch_name="Tensor.view_as",
                ref=lambda x, other: x.reshape(other.shape), dtypes=FLOATING_AND_COMPLEX,
                sample_func=_as_samples((((2, 3), (3, 2)), ((6,), (2, 3)), ((), (1, 1))))))
register(OpInfo("expand_as", _method("expand_as"), family=FAMILY, torch_name="Tensor.expand_as",
                ref=lambda x, other: np.broadcast_to(x, other.shape).copy(),
                dtypes=FLOATING_AND_COMPLEX,
                sample_func=_as_samples((((3, 1), (3, 4)), ((3,), (2, 3)), ((), (2, 2))))))
