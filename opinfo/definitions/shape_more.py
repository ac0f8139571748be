"""OpInfos for the shape ops added to ``refengine/ops/shape.py``: split chunk
unbind (several views) flip roll repeat tile (to merge into ``shape.py``; tril and
triu are already there)."""
from __future__ import annotations

import numpy as np

import adcheck.refengine as E

from ..core import FLOATING_AND_COMPLEX, OpInfo, SampleInput
from ..registry import register
from ..samples import make

FAMILY = "shape"
FC = FLOATING_AND_COMPLEX


def _samples(*calls):
    """A sample function from (shape, args, kwargs) rows."""
    def sample_func(opinfo, dtype):
        for shape, args, kwargs in calls:
            yield SampleInput(make(shape), args=args, kwargs=kwargs, name=f"{shape} {args} {kwargs}")
    return sample_func


_TABLE = (
    ("split", E.split, "split", _samples(((3, 5), (2, 1), {}), ((3, 5), ([1, 3, 1], -1), {}),
                                         ((4,), (4,), {}))),
    ("chunk", E.chunk, "chunk", _samples(((3, 5), (2, 1), {}), ((5, 2), (3,), {}))),
    ("unbind", E.unbind, "unbind", _samples(((3, 2), (), {}), ((2, 3, 2), (1,), {}))),
    ("flip", E.flip, "flip", _samples(((3, 4), ((0,),), {}), ((2, 3, 2), ((0, 2),), {}))),
    ("roll", E.roll, "roll", _samples(((3, 4), (1, 1), {}), ((3, 4), ((1, -2), (0, 1)), {}),
                                      ((3, 4), (5,), {}))),
    ("repeat", lambda x, *sizes: x.repeat(*sizes), "Tensor.repeat",
     _samples(((2, 3), (2, 1), {}), ((3,), (2, 2), {}), ((), (3,), {}))),
    ("tile", E.tile, "tile", _samples(((2, 3), ((2,),), {}), ((2, 3), ((2, 1, 2),), {}))),
)
_REFS = {"flip": lambda x, dims: np.flip(x, dims), "roll": np.roll}
for _name, _op, _torch, _samples_fn in _TABLE:
    register(OpInfo(_name, _op, family=FAMILY, torch_name=_torch, ref=_REFS.get(_name),
                    dtypes=FC, sample_func=_samples_fn))
