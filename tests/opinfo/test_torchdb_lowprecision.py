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


@pytest.mark.parametrize("op, index", [("quantile", 0), ("nanquantile", 1), ("stft", 0)])
def test_a_misshapen_batched_jvp_is_computed_column_by_column(op, index):
    # torch's legacy vmap (the batching its forward AD supports) adds a dimension
    # to these jvps (quantile of a 0-d input: shape (1,) for (); stft: (1, 51, 6)
    # for (6, 51)); each column alone has the output's shape
    entry, dtype, sample, call = _case(op, "float32", index)
    report = gradcheck.check(call.func, call.inputs, name=op, seed=0,
                             **entry.adcheck_options("forward", dtype))
    assert report.passed, report.message()
    assert "under vmap raised" in report.batching["fallback"]
    x = call.inputs[0].detach().double()
    rest = [a.detach().double() if torch.is_tensor(a) and a.is_floating_point() else a
            for a in call.inputs[1:]]
    with torch.autograd.forward_ad.dual_level():
        tangent = torch.ones_like(x)
        out = call.func(torch.autograd.forward_ad.make_dual(x, tangent), *rest)
        out = out[0] if isinstance(out, (tuple, list)) else out
        jvp = torch.autograd.forward_ad.unpack_dual(out).tangent
    h = 1e-6

    def at(t):
        value = call.func(t, *rest)
        return value[0] if isinstance(value, (tuple, list)) else value
    assert jvp.shape == out.shape
    torch.testing.assert_close(jvp, (at(x + h) - at(x - h)) / (2 * h), rtol=1e-6, atol=1e-6)
