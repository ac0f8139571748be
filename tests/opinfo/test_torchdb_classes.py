"""The failure classes of the whole-op_db sweep in every dtype (issue 18,
bench/opdb_sweep_alldtypes.md), each on the op that showed it, judged
against torch itself or an independent computation.
"""
import pytest

torch = pytest.importorskip("torch", reason="opinfo.torchdb adapts PyTorch's op_db; "
                            "torch is not installed")
pytest.importorskip("expecttest", reason="PyTorch's op_db imports expecttest, which is "
                    "not installed (pip install expecttest)")

from types import SimpleNamespace  # noqa: E402

from adcheck.opinfo import torchdb  # noqa: E402
from adcheck.runner.checks import Policy, check_sample  # noqa: E402
from adcheck.runner.torchregistry import TorchRegistry  # noqa: E402


def _results(op, dtype, index, checks=("reverse",)):
    entry = torchdb.get(op)
    settings = SimpleNamespace(registry=TorchRegistry(), checks=checks,
                               policy=Policy(precise=True, engine="torch"))
    sample = entry.sample(index, dtype)
    return sample, [r for r, _ in check_sample(entry, sample, torchdb.dtype_named(dtype),
                                               settings)]


def test_a_forward_torch_lacks_in_the_dtype_is_a_skip_with_torchs_reason():
    # torch has no CPU kernel of sum in complex32 (asked for as --dtype complex32;
    # op_db's first two samples of every op run forward in every dtype it lists)
    sample, results = _results("sum", "complex32", 0, ("reverse", "gradgrad"))
    with pytest.raises(NotImplementedError) as raised:
        torch.sum(sample.input)
    assert [r.status for r in results] == ["skipped", "skipped"]
    assert all(str(raised.value) in r.message for r in results)


def test_a_derivative_torch_lacks_in_a_listed_dtype_stays_a_failure():
    # add's second sample broadcasts: its forward runs in complex32, its backward
    # reduces the broadcast dimensions with sum, which torch lacks in complex32
    sample, results = _results("add", "complex32", 1, ("reverse",))
    out = torch.add(sample.input, *sample.args, **sample.kwargs)
    with pytest.raises(NotImplementedError, match="ComplexHalf"):
        torch.autograd.grad(out, [t for t in sample.tensors() if t.requires_grad],
                            torch.ones_like(out))
    assert [r.status for r in results] == ["failed"]
    assert "derivative does not run in complex32" in results[0].message


@pytest.mark.parametrize("dtype", ["float64", "complex128", "float32", "bfloat16"])
@pytest.mark.parametrize("index", [0, 1])
def test_corrcoef_of_one_variable_is_judged_not_failed(dtype, index):
    # corrcoef of a single variable is 1 whatever the observations: every derivative
    # is zero in exact arithmetic, and what AD computes is rounding noise
    sample, results = _results("corrcoef", dtype, index,
                               ("reverse", "forward", "gradgrad", "fwgrad_bwgrad"))
    x = sample.input.detach().to(torch.complex128 if sample.input.is_complex()
                                 else torch.float64)
    assert x.reshape(-1, x.shape[-1]).shape[0] == 1
    assert torch.allclose(torch.corrcoef(x * 3 + 1).real, torch.ones((), dtype=torch.float64))
    by_check = {r.check: r for r in results}
    assert by_check["reverse"].status == by_check["forward"].status == "passed"
    for check in ("gradgrad", "fwgrad_bwgrad"):
        assert by_check[check].status in ("passed", "skipped"), by_check[check].message
        if by_check[check].status == "skipped":
            assert "rounding noise" in by_check[check].message


def test_a_low_precision_sample_on_a_jump_cannot_be_judged():
    # op_db's bfloat16 sample of ceil holds whole numbers, where ceil jumps
    sample, results = _results("ceil", "bfloat16", 0, ("reverse",))
    x = sample.input.detach()
    assert bool((x == torch.ceil(x)).any())
    assert results[0].status == "skipped"
    assert results[0].message.startswith("cannot judge this sample") and "jump" in \
        results[0].message


def test_a_low_precision_sample_on_a_domain_edge_cannot_be_judged():
    # float16 rounds a sample of asin onto +-1, where its derivative is infinite
    sample, results = _results("asin", "float16", 0, ("reverse", "gradgrad"))
    assert bool((sample.input.detach().abs() == 1).any())
    assert [r.status for r in results] == ["skipped", "skipped"]
    assert all(r.message.startswith("cannot judge this sample") for r in results)


def test_a_second_derivative_beyond_float16_is_an_overflow_not_a_failure():
    # atanh'' = 2x / (1 - x^2)^2, in float64 at the float16 sample's largest |x|
    sample, results = _results("atanh", "float16", 0, ("gradgrad",))
    x = sample.input.detach().double().abs().max()
    assert float(2 * x / (1 - x * x) ** 2) > torch.finfo(torch.float16).max
    assert results[0].status == "skipped"
    assert "float16's largest value 65504" in results[0].message


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_copysign_second_order_in_half_precision_is_not_a_failure(dtype):
    # copysign(x, y) is piecewise linear in x: its second derivative is zero, and
    # what AD computes for it in half precision is rounding of x / x
    sample, results = _results("copysign", dtype, 1, ("gradgrad", "fwgrad_bwgrad"))
    x = sample.input.detach().double()
    step = 1e-6 * x.abs().clamp(min=1)
    other = sample.args[0].detach().double() if sample.args else 1.0
    first = (torch.copysign(x + step, other) - torch.copysign(x - step, other)) / (2 * step)
    assert torch.allclose(first.abs(), torch.ones_like(first), rtol=0, atol=1e-9)
    assert all(r.status in ("passed", "skipped") for r in results), \
        [r.message for r in results]


@pytest.mark.parametrize("op, index", [("atan2", 0), ("nn.functional.adaptive_avg_pool3d", 1)])
def test_probed_second_order_in_float16_is_not_a_failure(op, index):
    # atan2 at scalars: four nearby points measured a quarter of the forward cells'
    # rounding (now pooled over a row's directions); adaptive_avg_pool3d: cells
    # near 1e-5 are float16 subnormals, rounded absolutely. torch's own
    # gradgradcheck in float64 at the same values says the formulas are right
    entry = torchdb.get(op)
    assert entry.adcheck_options("fwgrad_bwgrad", "float16")["jacobian"] == "probed"
    sample, results = _results(op, "float16", index, ("gradgrad", "fwgrad_bwgrad"))
    call = entry.call(sample)
    wide = tuple(x.detach().double().requires_grad_() for x in call.inputs)
    assert torch.autograd.gradgradcheck(call.func, wide, check_fwd_over_rev=True, fast_mode=True)
    assert [r.status for r in results] == ["passed", "passed"], [r.message for r in results]


def test_probed_second_order_in_double_precision_gives_a_verdict():
    # copysign's first derivative has an output no input's tangent reaches: the
    # probed forward cells must still cover every float output
    entry = torchdb.get("copysign")
    assert entry.adcheck_options("fwgrad_bwgrad", "float64")["jacobian"] == "probed"
    sample, results = _results("copysign", "float64", 0, ("gradgrad", "fwgrad_bwgrad"))
    assert [r.status for r in results] == ["passed", "passed"], [r.message for r in results]


def test_an_output_that_is_nan_in_half_precision_cannot_be_judged():
    # torch's matrix_exp returns NaN everywhere for this float16 sample (finite in
    # float64): every derivative of it is NaN too, and none is evidence
    sample, results = _results("matrix_exp", "float16", 0, ("reverse",))
    x = sample.input.detach()
    assert bool(torch.isnan(torch.matrix_exp(x)).all())
    assert bool(torch.isfinite(torch.matrix_exp(x.double())).all())
    assert results[0].status == "skipped" and "is NaN" in results[0].message


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_a_batched_low_precision_jvp_may_differ_by_its_rounding(dtype):
    # instance_norm's vmapped jvp reduces in another order than one jvp at a time:
    # in float16 the two differed by 7.8e-3 against a fixed tolerance of 4.8e-3
    sample, results = _results("nn.functional.instance_norm", dtype, 0, ("forward",))
    def wide(v):
        return v.detach().double() if isinstance(v, torch.Tensor) else v

    args = [wide(a) for a in sample.args]
    kwargs = {k: wide(v) for k, v in sample.kwargs.items()}

    def norm(t):
        return torch.nn.functional.instance_norm(t, *args, **kwargs)
    # torch's formula is right: its float64 jvp matches central differences
    x = wide(sample.input)
    direction = torch.randn_like(x)
    _, jvp = torch.func.jvp(norm, (x,), (direction,))
    h = 1e-6
    difference = (norm(x + h * direction) - norm(x - h * direction)) / (2 * h)
    assert torch.allclose(jvp, difference, atol=1e-6)
    assert [r.status for r in results] == ["passed"], [r.message for r in results]
