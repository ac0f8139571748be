"""OpInfos for ``refengine/ops/indexing.py``: ``__getitem__`` (basic, advanced and
boolean-mask indices), gather, scatter, scatter_add and index_put."""
from __future__ import annotations

import numpy as np

import adcheck.refengine as E

from ..core import FLOATING_AND_COMPLEX, KnownFailure, OpInfo, SampleInput
from ..registry import register
from ..samples import index, make, mask

FAMILY = "indexing"


def getitem(x, key):
    """``x[key]``."""
    return x[key]


def _getitem_samples(opinfo, dtype):
    yield SampleInput(make((3, 4)), args=((1, slice(None, None, 2)),), name="int and step slice")
    yield SampleInput(make((3, 4)), args=((Ellipsis, None, 1),), name="ellipsis, None, int")
    yield SampleInput(make((3, 4)), args=(index((4,), 3, values=(0, 2, 2, 1)),),
                      name="advanced with repeats")
    yield SampleInput(make((3, 4)), args=((slice(None), index((2,), 4, values=(3, 0))),),
                      name="slice and advanced")
    yield SampleInput(make((3, 4)), args=(mask((3, 4)),), name="boolean mask")


def _gather_samples(opinfo, dtype):
    yield SampleInput(make((3, 4)), args=(1, index((3, 2), 4)), name="dim 1, repeats allowed")
    yield SampleInput(make((3, 4)), args=(0, index((2, 4), 3)), name="dim 0")
    yield SampleInput(make((5,)), args=(0, index((7,), 5)), name="1-D, longer index")


# scatter: no index repeats within a column, so the result does not depend on the order
_DISTINCT = ((0, 1, 2, 0), (2, 0, 1, 1))


def _scatter_samples(opinfo, dtype):
    yield SampleInput(make((3, 4)), args=(0, index((2, 4), 3, values=_DISTINCT), make((2, 4))),
                      name="dim 0, distinct targets")
    yield SampleInput(make((2, 5)), args=(1, index((2, 2), 5, values=((4, 0), (1, 3))),
                                          make((2, 3))), name="dim 1, src larger than index")


def _scatter_add_samples(opinfo, dtype):
    yield from _scatter_samples(opinfo, dtype)
    yield SampleInput(make((3, 2)), args=(0, index((4, 2), 3, values=((0, 1), (0, 1), (2, 2),
                                                                       (1, 0))),
                                          make((4, 2))), name="repeated targets add up")


def _index_put_samples(opinfo, dtype):
    yield SampleInput(make((3, 4)), args=((index((2,), 3, values=(0, 2)),), make((2, 4))),
                      name="rows, distinct")
    yield SampleInput(make((3, 4)), args=((index((3,), 3, values=(0, 0, 2)),
                                           index((3,), 4, values=(1, 1, 3))), make((3,))),
                      kwargs={"accumulate": True}, name="points, accumulate repeats")


register(OpInfo("getitem", getitem, family=FAMILY, torch_name="Tensor.__getitem__",
                ref=lambda x, key: x[key], dtypes=FLOATING_AND_COMPLEX,
                sample_func=_getitem_samples))
register(OpInfo("gather", E.gather, family=FAMILY, torch_name="gather",
                dtypes=FLOATING_AND_COMPLEX, sample_func=_gather_samples))
# torch's own backward refuses this sample: it returns an index-shaped gradient for
# src and then raises "ScatterBackward0 returned an invalid gradient ... got [2, 2]
# but expected shape compatible with [2, 3]"; so does the double backward, and
# torch.autograd.gradgradcheck raises the same on it (tests/cli/test_torch_known_failures.py).
# refengine's vjp is still checked on it against finite differences (test_op_gradients).
_TORCH_SRC_LARGER = tuple(KnownFailure(
    check, "torch's scatter/scatter_add backward raises when src is larger than index (it "
    "returns an index-shaped gradient for src)", samples=("dim 1, src larger than index",))
    for check in ("torch_reverse", "torch_gradgrad"))
register(OpInfo("scatter", E.scatter, family=FAMILY, torch_name="scatter",
                dtypes=FLOATING_AND_COMPLEX, sample_func=_scatter_samples,
                known_failures=_TORCH_SRC_LARGER))
register(OpInfo("scatter_add", E.scatter_add, family=FAMILY, torch_name="scatter_add",
                dtypes=FLOATING_AND_COMPLEX, sample_func=_scatter_add_samples,
                known_failures=_TORCH_SRC_LARGER))
register(OpInfo("index_put", E.index_put, family=FAMILY, torch_name="index_put",
                dtypes=FLOATING_AND_COMPLEX, sample_func=_index_put_samples))


def _on_a_copy(method):
    """``x.clone().METHOD(...)``: the write goes to a copy of the leaf input, so it is
    differentiable (and the same composite runs on torch tensors)."""
    def call(x, *args):
        return getattr(x.clone(), method)(*args)
    call.__name__ = method
    return call


def _fill_samples(opinfo, dtype):
    yield SampleInput(make((2, 3)), args=(0.5,), name="number")
    yield SampleInput(make((2, 3)), args=(make(()),), name="tensor value")


def _copy_samples(opinfo, dtype):
    yield SampleInput(make((2, 3)), args=(make((2, 3)),), name="same shape")
    yield SampleInput(make((2, 3)), args=(make((3,)),), name="broadcast src")


# The overwritten tensor's gradient is zero; the written value's is passed through.
# zero_ and fill_ (with a number) have constant gradients: no second order to check.
for _method_name, _samples, _ref, _second in (
        ("zero_", lambda o, d: iter((SampleInput(make((2, 3)), name="2x3"),)),
         lambda x: np.zeros_like(x), False),
        ("fill_", _fill_samples, lambda x, v: np.full_like(x, v), False),
        ("copy_", _copy_samples, lambda x, s: np.broadcast_to(s, x.shape).copy(), True)):
    _op = _on_a_copy(_method_name)
    register(OpInfo(_method_name, _op, family=FAMILY, torch_fn=_op, ref=_ref,
                    dtypes=FLOATING_AND_COMPLEX, sample_func=_samples,
                    supports_gradgrad=_second, supports_fwgrad_bwgrad=_second))
