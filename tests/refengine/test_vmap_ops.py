"""Every op batches: vmap, batched backward and batched forward mode give what
running the examples one at a time gives, without the loop fallback."""
from __future__ import annotations

import functools

import pytest

from adcheck import opinfo
import adcheck.refengine as E
from vmap_harness import check_sample

DTYPES = (E.float64, E.complex128)

#: ops whose result shape depends on the values, so no batching rule can
#: exist (PyTorch's vmap refuses them too); they run the loop fallback
DATA_DEPENDENT = {"masked_select"}

#: not ops but comparisons returning one Python bool (PyTorch's vmap refuses
#: torch.equal too): there is no per-example result to batch
BOOL_VALUED = {"equal", "allclose"}

CASES = [pytest.param(info, dtype, id=f"{info.name}-{dtype.name}")
         for info in opinfo.op_db for dtype in DTYPES
         if dtype in info.dtypes and (dtype is E.float64 or info.supports_complex_autograd)
         and info.name not in BOOL_VALUED]


@functools.lru_cache(maxsize=None)
def outcomes(info, dtype) -> list:
    return [(sample, check_sample(info, sample)) for sample in
            info.sample_inputs(dtype, requires_grad=True)]


@pytest.mark.parametrize("info, dtype", CASES)
def test_batched_equals_looped(info, dtype):
    problems = [f"{sample!r}: {m}" for sample, outcome in outcomes(info, dtype)
                for m in outcome.mismatches]
    assert sum(o.compared for _, o in outcomes(info, dtype)), "no sample was compared"
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("info, dtype", CASES)
def test_no_loop_fallback(info, dtype):
    looped = {}
    for _, outcome in outcomes(info, dtype):
        for name, count in outcome.fallbacks.items():
            looped[name] = looped.get(name, 0) + count
    looped = {k: v for k, v in looped.items() if k not in DATA_DEPENDENT}
    assert not looped, f"ops without a batching rule ran once per example: {looped}"
