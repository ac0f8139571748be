"""False alarms of the whole-op_db sweep in the narrow dtypes (issue 18,
bench/opdb_sweep_alldtypes.md): each op is the one that showed the class, the
check that failed now passes, and an independent computation (torch in
float64, finite differences, mpmath) says the formula is right there.
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="opinfo.torchdb adapts PyTorch's op_db; "
                            "torch is not installed")
pytest.importorskip("expecttest", reason="PyTorch's op_db imports expecttest, which is "
                    "not installed (pip install expecttest)")

import gradcheck  # noqa: E402
from gradcheck.engines.torch import TorchEngine  # noqa: E402
from opinfo import torchdb  # noqa: E402


def _case(op, dtype, index):
    entry = torchdb.get(op)
    dtype = getattr(torch, dtype)
    sample = entry.sample(index, dtype)
    return entry, dtype, sample, entry.call(sample)


def _check(op, dtype, index, check):
    entry, dtype, sample, call = _case(op, dtype, index)
    options = entry.adcheck_options(check, dtype, precise=True)
    return gradcheck.check(call.func, call.inputs, name=op, seed=0, **options)


def test_the_double_precision_copy_of_a_partial_view_keeps_its_storage():
    base = torch.arange(20, dtype=torch.float32)
    view = base[5:15].requires_grad_()
    wide = TorchEngine().widened(view)
    assert wide.dtype == torch.float64 and wide.requires_grad and wide.is_leaf
    assert (wide.storage_offset(), wide.stride()) == (5, (1,))
    # as_strided with storage_offset=0 reads elements before the view: the same ones
    assert torch.equal(wide.as_strided((2, 2), (1, 2), 0),
                       base.double().as_strided((2, 2), (1, 2), 0))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "complex64"])
def test_as_strided_partial_views_reads_outside_the_view_in_every_dtype(dtype):
    # sample 1 views storage elements 0..3, outside its input (elements 5..14):
    # the true Jacobian is zero, as torch's float64 gradcheck agrees
    entry, wide, sample, call = _case("as_strided.partial_views", "float64", 1)
    assert call.inputs[0].storage_offset() == 5
    assert entry.torch_verdict(sample).passed
    jac = torch.autograd.functional.jacobian(lambda x: call.func(x), call.inputs[0].detach())
    assert not jac.any()
    for check in ("reverse", "gradgrad"):
        report = _check("as_strided.partial_views", dtype, 1, check)
        assert report.passed, report.message()
