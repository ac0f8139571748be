"""Term 3 of ``gradcheck.lowprec.lowprecision``: how a derivative's sums round in bfloat16 and
float16, measured on the function's own forward rather than assumed per term.

PyTorch's CPU kernels accumulate half-precision sums in float32 and round once; the
model relies on that only when the forward shows it, and keeps a unit of roundoff
per partial sum for a function whose forward rounds partial sums to the dtype.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from gradcheck_support import load_engine

from adcheck.gradcheck import check
from adcheck.gradcheck.lowprec.lowprecision import U32, sum_units
from adcheck.gradcheck.core.problem import Problem
from adcheck.gradcheck.lowprec.widening import widened

HALF = ["bfloat16", "float16"]


@pytest.fixture(scope="module")
def torch():
    return load_engine("torch")


def _stepwise_mm(a, b):
    """``a @ b`` with every partial sum rounded to the dtype: a naive kernel."""
    out = a[..., :, 0:1] * b[0:1, :]
    for k in range(1, a.shape[-1]):
        out = out + a[..., :, k:k + 1] * b[k:k + 1, :]
    return out


def _stepwise(torch):
    """``x @ w @ w.T`` with a correct vjp and jvp, all three rounding every partial sum."""
    class Stepwise(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(w)
            ctx.save_for_forward(w)
            return _stepwise_mm(_stepwise_mm(x, w), w.mT)

        @staticmethod
        def backward(ctx, g):
            (w,) = ctx.saved_tensors
            return _stepwise_mm(_stepwise_mm(g, w), w.mT), None

        @staticmethod
        def jvp(ctx, tx, tw):
            (w,) = ctx.saved_tensors
            return _stepwise_mm(_stepwise_mm(tx, w), w.mT)
    return Stepwise.apply


def _operands(torch, dtype_name, n=32, seed=3):
    rng = np.random.default_rng(seed)
    dtype = getattr(torch, dtype_name)
    x = torch.tensor(rng.uniform(-1, 1, (2, n))).to(dtype).requires_grad_()
    w = torch.tensor(rng.uniform(-1, 1, (n, n))).to(dtype)
    return x, w


@pytest.mark.parametrize("dtype_name", HALF)
@pytest.mark.parametrize("n", [3, 64, 1024])
def test_torch_half_precision_matmul_and_sum_round_once(torch, dtype_name, n):
    # the premise of s = u32: against the exact result of the rounded inputs (float64)
    # every output is within one rounding, plus float32 accumulation (a few u32 of the
    # sum of the terms' magnitudes)
    rng = np.random.default_rng(n)
    dtype = getattr(torch, dtype_name)
    u = torch.finfo(dtype).eps / 2
    a = torch.tensor(rng.standard_normal((16, n))).to(dtype)
    b = torch.tensor(rng.standard_normal((n, 16))).to(dtype)
    exact = a.double() @ b.double()
    slack = 8 * U32 * (a.double().abs() @ b.double().abs())
    assert bool(((a @ b).double() - exact).abs().le(u * exact.abs() + slack).all())
    exact = a.double().sum(-1)
    slack = 8 * U32 * a.double().abs().sum(-1)
    assert bool((a.sum(-1).double() - exact).abs().le(u * exact.abs() + slack).all())


@pytest.mark.parametrize("dtype_name", HALF)
def test_the_unit_of_sums_is_float32s_when_the_forward_rounds_once(torch, dtype_name):
    x, w = _operands(torch, dtype_name)
    problem = Problem(lambda x, w: x @ w, (x, w), warn_precision=False)
    wide, _ = widened(problem)
    assert sum_units(problem, wide) == {0: U32}


@pytest.mark.parametrize("dtype_name", HALF)
def test_the_unit_of_sums_is_the_dtypes_when_the_forward_rounds_partial_sums(torch,
                                                                            dtype_name):
    x, w = _operands(torch, dtype_name)
    u = torch.finfo(getattr(torch, dtype_name)).eps / 2
    low = _stepwise_mm(x.detach(), w)
    exact = x.detach().double() @ w.double()
    # independently: some output is off by well over one rounding
    assert bool(((low.double() - exact).abs() - u * exact.abs()).max() > u * exact.abs().max() / 4)
    problem = Problem(_stepwise_mm, (x, w), warn_precision=False)
    wide, _ = widened(problem)
    assert sum_units(problem, wide) == {0: u}


@pytest.mark.parametrize("dtype_name", HALF)
def test_a_correct_formula_rounding_every_partial_sum_passes(torch, dtype_name):
    x, w = _operands(torch, dtype_name, n=16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = check(_stepwise(torch), (x, w), precise=True, check_forward_ad=True, seed=0)
    assert report.passed, report.message()


@pytest.mark.parametrize("dtype_name", HALF)
def test_chained_products_pass_and_one_product_resolves_below_2e_2(torch, dtype_name):
    # two once-rounded kernels in a row: the forward shows the intermediate rounding
    x, w = _operands(torch, dtype_name, n=8)
    f = (lambda x, w: x @ w @ w.mT)
    report = check(f, (x, w.requires_grad_()), precise=True, check_forward_ad=True, seed=0)
    assert report.passed, report.message()
    mm = torch.tensor([[1.0, 2.0, -0.5], [0.3, -1.2, 0.8]]).to(getattr(torch, dtype_name))
    for result in check(lambda a, b: a @ b, (mm.requires_grad_(), w[:3, :3].detach()),
                        precise=True, check_forward_ad=True, seed=0).results:
        if result.check in ("reverse", "forward"):
            assert result.precision.resolution < 3e-2 / 1.5, result.precision.text()
