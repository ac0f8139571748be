"""OpInfos for the indexing ops added to ``refengine/ops/indexing.py``:
index_select index_add masked_select, and boolean-mask indexing (to merge
into ``indexing.py``)."""
from __future__ import annotations

import numpy as np

import adcheck.refengine as E

from ..core import FLOATING_AND_COMPLEX, OpInfo, SampleInput
from ..registry import register
from ..samples import index, make, mask

FAMILY = "indexing"
FC = FLOATING_AND_COMPLEX


def _index_select_samples(opinfo, dtype):
    yield SampleInput(make((3, 4)), args=(1, index((3,), 4, values=(2, 0, 2))),
                      name="repeated index, dim 1")
    yield SampleInput(make((3, 4)), args=(0, index((2,), 3)), name="dim 0")
    yield SampleInput(make((5,)), args=(0, index((0,), 5, values=())), name="empty index")


register(OpInfo("index_select", E.index_select, family=FAMILY, torch_name="index_select",
                ref=lambda x, dim, idx: np.take(x, idx, axis=dim), dtypes=FC,
                sample_func=_index_select_samples))


def _index_add_samples(opinfo, dtype):
    yield SampleInput(make((3, 4)), args=(1, index((3,), 4, values=(2, 0, 2)), make((3, 3))),
                      name="repeated index")
    yield SampleInput(make((3, 4)), args=(0, index((2,), 3, values=(1, 2)), make((2, 4))),
                      kwargs={"alpha": 2.0}, name="alpha=2")


register(OpInfo("index_add", E.index_add, family=FAMILY, torch_name="index_add", dtypes=FC,
                sample_func=_index_add_samples))


def _masked_select_samples(opinfo, dtype):
    yield SampleInput(make((3, 4)), args=(mask((3, 4)),), name="same shape")
    yield SampleInput(make((3, 4)), args=(mask((4,)),), name="mask broadcast")
    yield SampleInput(make((4,)), args=(mask((3, 4)),), name="input broadcast")


register(OpInfo("masked_select", E.masked_select, family=FAMILY, torch_name="masked_select",
                ref=lambda x, m: np.broadcast_arrays(x, m)[0][np.broadcast_arrays(x, m)[1]],
                dtypes=FC, sample_func=_masked_select_samples))


def _getitem_mask_samples(opinfo, dtype):
    yield SampleInput(make((3, 4)), args=(mask((3, 4)),), name="full mask")
    yield SampleInput(make((3, 4)), args=(mask((3,)),), name="mask on dim 0")


register(OpInfo("getitem_bool_mask", lambda x, m: x[m], family=FAMILY,
                torch_name="Tensor.__getitem__", ref=lambda x, m: x[m], dtypes=FC,
                sample_func=_getitem_mask_samples, description="x[mask] (a copy)"))


def _setitem_mask(x, m, v):
    out = x.clone()
    out[m] = v
    return out


def _setitem_mask_samples(opinfo, dtype):
    yield SampleInput(make((3, 4)), args=(mask((3, 4), values=np.eye(3, 4, dtype=bool)),
                                          make((3,))), name="values for each selected entry")
    yield SampleInput(make((3, 4)), args=(mask((3,), values=(True, False, True)), make((4,))),
                      name="rows, broadcast values")


register(OpInfo("setitem_bool_mask", _setitem_mask, family=FAMILY, dtypes=FC,
                sample_func=_setitem_mask_samples,
                description="x.clone()[mask] = v; differentiable in x and v"))
