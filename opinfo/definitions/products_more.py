"""OpInfos for ``einsum`` (added to ``refengine/ops/products.py``; to merge into
``products.py``). The op is called as ``op(operands, equation)``."""
from __future__ import annotations

import numpy as np

import refengine as E

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
        yield SampleInput([make(s) for s in shapes], args=(equation,), name=equation)


register(OpInfo("einsum", lambda operands, equation: E.einsum(equation, operands),
                family=FAMILY, ref=lambda operands, equation: np.einsum(equation, *operands),
                mpmath_ref=lambda operands, equation: np.einsum(equation, *operands),
                dtypes=FLOATING_AND_COMPLEX, sample_func=_einsum_samples))
