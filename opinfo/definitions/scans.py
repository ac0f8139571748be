"""OpInfos for ``refengine/ops/scans.py``: cumsum cumprod."""
from __future__ import annotations

import numpy as np

import adcheck.refengine as E

from ..core import FLOATING_AND_COMPLEX, OpInfo, SampleInput
from ..registry import register
from ..samples import make

FAMILY = "scans"


def _scan_samples(opinfo, dtype):
    for shape, dim in (((4,), 0), ((2, 3), 1), ((2, 3, 2), 0), ((2, 3, 2), -1)):
        yield SampleInput(make(shape), args=(dim,), name=f"{shape} dim={dim}")
    yield SampleInput(make(()), args=(0,), name="scalar")
    if opinfo.name == "cumprod":
        yield SampleInput(make((2, 5), values=((1.5, 0.0, 2.0, 0.0, -1.0),
                                              (0.5, 2.0, 0.0, 1.5, 3.0))),
                          args=(1,), name="zeros (one and two in a slice)")


register(OpInfo("cumsum", E.cumsum, family=FAMILY, torch_name="cumsum",
                ref=lambda x, dim: np.cumsum(x, axis=dim) if x.ndim else x.copy(),
                mpmath_ref=lambda x, dim: np.cumsum(x, axis=dim) if x.ndim else x.copy(),
                dtypes=FLOATING_AND_COMPLEX, sample_func=_scan_samples))
register(OpInfo("cumprod", E.cumprod, family=FAMILY, torch_name="cumprod",
                ref=lambda x, dim: np.cumprod(x, axis=dim) if x.ndim else x.copy(),
                mpmath_ref=lambda x, dim: np.cumprod(x, axis=dim) if x.ndim else x.copy(),
                dtypes=FLOATING_AND_COMPLEX, sample_func=_scan_samples))
