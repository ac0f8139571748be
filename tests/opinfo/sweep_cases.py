"""Which (op, dtype, sample) cases the tests of this directory run.

The default run (CI) is a deterministic, representative part of the
registry: every OpInfo in float64 and, where it lists it, complex128, on
its first two representative samples. ``ADCHECK_EXHAUSTIVE=1`` turns the
same tests into the exhaustive sweep: every sample the OpInfo has, in both
dtypes. The parameters change, never the assertions::

    ADCHECK_EXHAUSTIVE=1 python -m pytest tests/opinfo

Both sweep the double-precision dtypes only, as ``adcheck ops`` does by
default: finite differences at gradcheck's eps=1e-6 cannot judge float32 or
complex64 (their rounding, 6e-8, over the step is a 6% error; gradcheck
warns so). Single-precision values are compared with NumPy and torch in
tests/refengine (test_op_references.py, test_op_torch.py).
"""
from __future__ import annotations

import math
import os

import pytest

from adcheck import opinfo
import adcheck.refengine as E
from adcheck.opinfo.samples import TensorSpec

EXHAUSTIVE = os.environ.get("ADCHECK_EXHAUSTIVE", "") not in ("", "0")
#: the dtypes of both runs: double precision, real and complex
DEFAULT_DTYPES = (E.float64, E.complex128)


def dtypes_of(info) -> list:
    """The dtypes to sweep ``info`` in: those of float64 and complex128 it lists."""
    return [d for d in DEFAULT_DTYPES if d in info.dtypes]


def _specs(value, found: list) -> list:
    if isinstance(value, TensorSpec):
        found.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _specs(v, found)
    elif isinstance(value, dict):
        for v in value.values():
            _specs(v, found)
    return found


def _differentiable_specs(spec_sample) -> list:
    specs = _specs((spec_sample.input, spec_sample.args, spec_sample.kwargs), [])
    return [s for s in specs if s.kind == "float" and s.requires_grad is not False]


def _representative(spec_sample) -> bool:
    """Every differentiable tensor has at least one dimension and one element:
    neither the scalar nor the empty sample, which exercise little of a rule."""
    specs = _differentiable_specs(spec_sample)
    return bool(specs) and all(len(s.shape) >= 1 and math.prod(s.shape) > 0 for s in specs)


#: representative samples per (op, dtype) in the default run
DEFAULT_SAMPLES = 2


def sample_indices(info, dtype) -> list:
    """The indices of the samples to run: all of them (exhaustive), or the first
    ``DEFAULT_SAMPLES`` representative ones (the first sample when none is)."""
    specs = list(info.sample_func(info, dtype))
    if EXHAUSTIVE:
        return list(range(len(specs)))
    chosen = [i for i, s in enumerate(specs) if _representative(s)]
    return chosen[:DEFAULT_SAMPLES] or [0][:len(specs)]


def sample_cases(mode: str | None = None) -> list:
    """``pytest.param(info, dtype, index)`` for each case; with ``mode``, only
    the (op, dtype) pairs whose OpInfo claims that mode."""
    cases = []
    for info in opinfo.op_db:
        for dtype in dtypes_of(info):
            if mode is not None and not info.supports(mode, dtype):
                continue
            for index in sample_indices(info, dtype):
                cases.append(pytest.param(info, dtype, index,
                                          id=f"{info.name}-{dtype.name}-s{index}"))
    return cases


def op_dtype_cases(mode: str) -> list:
    """``pytest.param(info, dtype)`` for each OpInfo and sweep dtype that claims ``mode``."""
    return [pytest.param(info, dtype, id=f"{info.name}-{dtype.name}")
            for info in opinfo.op_db for dtype in dtypes_of(info) if info.supports(mode, dtype)]
