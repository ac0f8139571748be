"""OpInfos for ``einsum`` (added to ``refengine/ops/products.py``; to merge into
``products.py``): ``einsum(equation, *operands)``, the sample's input is the equation."""
from __future__ import annotations

import numpy as np

import adcheck.refengine as E

from ..core import FLOATING_AND_COMPLEX, OpInfo, SampleInput
from ..registry import register
from ..samples import make

FAMILY = "products"
_CASES = (
    ("ij,jk->ik", ((2, 3), (3, 4))),
    ("ii", ((3, 3),)),
    ("ii->i", ((3, 3),)),
    ("...ij,...jk", ((2, 2, 3), (2, 3, 2))),
    ("ab,bc,cd->a", ((2, 3), (3, 2), (2, 2))),
    ("i,j->ij", ((3,), (2,))),
    ("bij->", ((2, 2, 3),)),
)


def _einsum_samples(opinfo, dtype):
    for equation, shapes in _CASES:
        yield SampleInput(equation, args=tuple(make(s) for s in shapes), name=equation)


register(OpInfo("einsum", E.einsum, family=FAMILY, torch_name="einsum",
                ref=lambda equation, *operands: np.einsum(equation, *operands),
                dtypes=FLOATING_AND_COMPLEX, sample_func=_einsum_samples))
