"""Low-precision failures of the whole-op_db sweep, group B (issue 18,
bench/opdb_sweep_alldtypes.md): logcumsumexp in complex64 and
householder_product in complex64. Each verdict is settled by an independent
computation (torch in complex128 at the same values, a plain formula), never
by adcheck's own numbers.
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="opinfo.torchdb adapts PyTorch's op_db; "
                            "torch is not installed")
pytest.importorskip("expecttest", reason="PyTorch's op_db imports expecttest, which is "
                    "not installed (pip install expecttest)")

from adcheck import gradcheck  # noqa: E402
from torchdb_cases import case, checked  # noqa: E402

U = 2.0 ** -24   # complex64's unit roundoff


def _vjp_rows(func, inputs, wide):
    """The vjp of each output coordinate (vector 1) on input 0, as complex128 rows."""
    inputs = [t.detach().to(torch.complex128 if wide else t.dtype).requires_grad_(True)
              for t in inputs]
    y = func(*inputs)
    rows = []
    for r in range(y.numel()):
        v = torch.zeros(y.numel(), dtype=y.dtype)
        v[r] = 1
        g = torch.autograd.grad(y, inputs[0], v.reshape(y.shape), retain_graph=True)[0]
        rows.append(g.resolve_conj().reshape(-1).to(torch.complex128).numpy())
    return np.array(rows), y.detach().reshape(-1).to(torch.complex128).numpy()


def test_complex_logcumsumexp_backward_at_10000_is_off_by_its_output_rounding_only():
    # sample 1 of op_db's logcumsumexp sets a slice to 10000 (complex64 keeps it exactly);
    # along dim 1 the outputs are 10000 + log(k), rounded to complex64's spacing there
    report = checked("logcumsumexp", "complex64", 1, "reverse")
    assert report.passed, report.message()
    entry, dtype, sample, call = case("logcumsumexp", "complex64", 1)
    low, y_low = _vjp_rows(call.func, call.inputs, wide=False)
    high, y_high = _vjp_rows(call.func, call.inputs, wide=True)
    r, c = np.unravel_index(np.argmax(np.abs(low - high)), low.shape)
    x = call.inputs[0].detach().reshape(-1).to(torch.complex128).numpy()
    # torch's entry is exp(x_c - y_r) with y_r the complex64 output: the derivative at the
    # point whose output is the rounded one (independently: the complex128 output and AD)
    assert abs(low[r, c] - np.exp(x[c] - y_low[r])) <= 4 * U * abs(high[r, c])
    assert abs(high[r, c] - np.exp(x[c] - y_high[r])) <= 1e-12
    assert abs(y_low[r] - y_high[r]) > 1e-4     # a rounding of 10000.69 in complex64
    # along the imaginary axis of the input the same error appears: the rows for the
    # vector 1j are the rows for 1 times 1j (holomorphic), so both axes need the allowance
    assert abs(low[r, c] - high[r, c]) > 100 * U * abs(high[r, c])


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_logcumsumexp_forward_ad_overflows_where_the_derivative_is_finite(dtype):
    # torch's complex jvp is cumsum(t * exp(x)) / cumsum(exp(x)) without the max shift
    # (op_db marks it an expected failure, for complex128 only): exp(10000) is inf
    import torch.autograd.forward_ad as fwAD
    entry, torch_dtype, sample, call = case("logcumsumexp", dtype, 1)
    x = call.inputs[0].detach()
    tangent = torch.zeros(x.numel(), dtype=x.dtype)
    tangent[0] = 1
    with fwAD.dual_level():
        out = call.func(fwAD.make_dual(x, tangent.reshape(x.shape)))
        jvp = fwAD.unpack_dual(out).tangent
    rows, _ = _vjp_rows(call.func, call.inputs, wide=True)
    assert np.isfinite(rows).all()      # the true derivative (complex128 reverse mode)
    assert torch.isnan(jvp).any()
    if dtype == "complex64":
        report = checked("logcumsumexp", dtype, 1, "forward")
        assert not report.passed and "NaN or inf" in report.message()


def _plain_householder(a, tau):
    """The product of the reflectors ``I - tau_i v_i v_i^H``, its first columns:
    the definition, one rank-one update per reflector (no inverse anywhere)."""
    m, n = a.shape
    q = torch.eye(m, dtype=a.dtype)
    for i in range(tau.shape[0]):
        v = torch.cat([torch.zeros(i, dtype=a.dtype), torch.ones(1, dtype=a.dtype),
                       a[i + 1:, i]])
        q = q - tau[i] * (q @ v)[:, None] * v.conj()[None, :]
    return q[:, :n]


@pytest.mark.parametrize("index", [0, 1])
def test_householder_product_backward_in_complex64_is_a_torch_inaccuracy(index):
    report = checked("linalg.householder_product", "complex64", index, "reverse")
    assert not report.passed
    entry, dtype, sample, call = case("linalg.householder_product", "complex64", index)
    torch_low, _ = _vjp_rows(call.func, call.inputs, wide=False)
    truth, _ = _vjp_rows(call.func, call.inputs, wide=True)
    plain_low, _ = _vjp_rows(_plain_householder, call.inputs, wide=False)
    plain_high, _ = _vjp_rows(_plain_householder, call.inputs, wide=True)
    M = np.abs(truth).max()
    assert np.abs(plain_high - truth).max() <= 1e-8 * M     # the plain product is the op
    # the plain formula in complex64 is within a few roundings of the largest entry ...
    assert np.abs(plain_low - truth).max() <= 4 * U * M
    # ... torch's complex64 backward, at the same inputs, hundreds of times farther
    assert np.abs(torch_low - truth).max() >= 300 * U * M


def _fwd_over_rev(func, inputs, g, wide):
    """The Jacobian of ``x -> vjp(func, x, g)`` on input 0 by forward mode over
    reverse mode, column by column, as float64."""
    import torch.autograd.forward_ad as fwAD
    dtype = torch.float64 if wide else inputs[0].dtype
    x = [t.detach().to(dtype) for t in inputs]
    columns = []
    for c in range(x[0].numel()):
        tangent = torch.zeros(x[0].numel(), dtype=dtype)
        tangent[c] = 1
        with fwAD.dual_level():
            dual = fwAD.make_dual(x[0].clone().requires_grad_(), tangent.reshape(x[0].shape))
            y = func(dual, *x[1:])
            (vjp,) = torch.autograd.grad(y, dual, g.to(dtype), create_graph=True)
            columns.append(fwAD.unpack_dual(vjp).tangent.detach().reshape(-1).double().numpy())
    return np.stack(columns, axis=1)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_masked_logaddexp_second_order_with_a_nan_in_the_float64_reverse_jacobian(dtype):
    # masked-out coordinates make torch's float64 reverse-over-reverse NaN (the sample's
    # -inf fill), so the allowance of those cells is infinite; a row that measured no
    # spread multiplied it by 0: a NaN tolerance that failed cells off by 0.0
    report = checked("masked.logaddexp", dtype, 1, "fwgrad_bwgrad")
    assert report.passed, report.message()
    entry, torch_dtype, sample, call = case("masked.logaddexp", dtype, 1)
    g = torch.linspace(-1, 1, call.inputs[0].numel()).to(torch_dtype)
    low = _fwd_over_rev(call.func, call.inputs, g, wide=False)
    high = _fwd_over_rev(call.func, call.inputs, g, wide=True)
    # the formula is right there: forward over reverse in the dtype is finite and
    # within a few roundings of the float64 one (the largest entry's)
    eps = torch.finfo(torch_dtype).eps
    assert np.isfinite(low).all() and np.isfinite(high).all()
    assert np.abs(low - high).max() <= 4 * eps * max(np.abs(high).max(), 1.0)


def test_a_row_without_measured_spread_keeps_an_infinite_allowance_infinite():
    from adcheck.gradcheck.large.lowprobed import pooled
    spread = np.zeros((1, 3))
    scale = np.array([[np.inf, 1.0, 2.0]])
    assert np.array_equal(pooled(spread, scale, axis=1), np.array([[0.0, 0.0, 0.0]]))
    allowance = scale + 3.0 * pooled(spread, scale, axis=1)
    assert np.isinf(allowance[0, 0]) and not np.isnan(allowance).any()


def test_masked_cumprod_second_order_rounding_seen_at_few_nearby_points():
    # output 4 is x1 * x4 (the mask keeps x1 and x4), so the true second derivative
    # d(vjp_4)/dx4 is 0; torch's float16 forward over reverse computes it as a
    # difference of two terms of size |g4 * x1| and leaves 1.5 roundings of them
    import torch.autograd.forward_ad as fwAD
    entry, dtype, sample, call = case("masked.cumprod", "float16", 0)
    options = entry.adcheck_options("fwgrad_bwgrad", dtype, precise=True)
    report = gradcheck.check(call.func, call.inputs, name="masked.cumprod",
                             seed=9049239113480626958, **options)   # the sweep's seed
    assert report.passed, report.message()
    g = torch.tensor([0.3, -0.5, 0.2, 0.9, -0.71], dtype=dtype)

    def entry_44(x, dtype):
        tangent = torch.zeros(5, dtype=dtype)
        tangent[4] = 1
        with fwAD.dual_level():
            dual = fwAD.make_dual(x.to(dtype).clone().requires_grad_(), tangent)
            (vjp,) = torch.autograd.grad(call.func(dual), dual, g.to(dtype), create_graph=True)
            return float(fwAD.unpack_dual(vjp).tangent[4])

    x = call.inputs[0].detach()
    terms = abs(float(g[4]) * float(x[1]))
    assert entry_44(x, torch.float64) == 0.0
    assert 0 < abs(entry_44(x, dtype)) <= 2 * 2.0 ** -11 * terms
    rng = np.random.default_rng(1)
    nearby = [entry_44((x.double() * torch.tensor(1 + 2.0 ** -8 * rng.choice([-1.0, 1.0], 5)))
                       .half(), dtype) for _ in range(40)]
    # the rounding shows at a minority of the points around: four of them often miss it
    assert 0 < sum(v != 0 for v in nearby) <= 20


def test_a_small_problem_measures_its_rounding_at_more_points():
    from adcheck.gradcheck.lowprec.adrounding import MAX_POINTS, POINTS, point_count
    from adcheck.gradcheck.core.problem import Problem
    small = Problem(torch.sin, (torch.ones(5, dtype=torch.float16, requires_grad=True),), "sin",
                    warn_precision=False)
    large = Problem(torch.sin, (torch.ones(400, dtype=torch.float16, requires_grad=True),), "sin",
                    warn_precision=False)
    assert point_count(small) == MAX_POINTS and point_count(large) == POINTS
