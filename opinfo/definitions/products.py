"""OpInfos for ``refengine/ops/products.py``: matmul mm bmm mv dot vdot outer."""
from __future__ import annotations

import numpy as np

import adcheck.refengine as E

from ..core import FLOATING_AND_COMPLEX, OpInfo, SampleInput
from ..registry import register
from ..samples import make

FAMILY = "products"


def _pairs(*shape_pairs):
    def sample_func(opinfo, dtype):
        for a, b in shape_pairs:
            yield SampleInput(make(a), args=(make(b),), name=f"shapes {a} {b}")
    return sample_func


def mp_matmul(x, y):
    """An mpmath reference for products: NumPy's matmul on object arrays is exact
    arithmetic on the mpmath entries."""
    if x.ndim == 1 and y.ndim == 1:
        return np.array(sum((a * b for a, b in zip(x, y)), x.flat[0] * 0), dtype=object)
    return np.matmul(x, y)


_TABLE = (
    ("mm", np.matmul, _pairs(((2, 3), (3, 4)), ((1, 1), (1, 2)), ((2, 0), (0, 3)))),
    ("bmm", np.matmul, _pairs(((2, 2, 3), (2, 3, 2)), ((1, 3, 1), (1, 1, 2)))),
    ("mv", np.matmul, _pairs(((2, 3), (3,)), ((1, 4), (4,)))),
    ("dot", np.dot, _pairs(((3,), (3,)), ((1,), (1,)))),
    ("vdot", np.vdot, _pairs(((3,), (3,)),)),
    ("outer", np.outer, _pairs(((3,), (2,)), ((1,), (4,)))),
    ("matmul", np.matmul, _pairs(((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 2)), ((2, 3), (3, 2)),
                                 ((2, 2, 3), (3, 2)), ((2, 1, 2, 3), (3, 3, 1)),
                                 ((3,), (2, 3, 2)))),
)

_MP = {"outer": lambda x, y: np.multiply.outer(x, y),
       "vdot": lambda x, y: mp_matmul(np.vectorize(lambda v: v.conjugate(), otypes=[object])(x), y)}

for _name, _ref, _samples in _TABLE:
    register(OpInfo(_name, getattr(E, _name), family=FAMILY, torch_name=_name, ref=_ref,
                    mpmath_ref=_MP.get(_name, mp_matmul),
                    dtypes=FLOATING_AND_COMPLEX, sample_func=_samples))
