"""A low-precision formula's kernel allowance (term 2 of
``gradcheck.lowprec.lowprecision``) scales an output coordinate that depends
on one input coordinate by its own row, not by the largest entry of the
whole output: exp's backward doubled at |x| < 1 passed in float32 beside an
entry of exp(15) = 3.3e6, every entry being allowed 4.7."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from adcheck.gradcheck import check  # noqa: E402


def _exp(factor_inside: float):
    class Exp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(x, y)
            return y

        @staticmethod
        def backward(ctx, grad):
            x, y = ctx.saved_tensors
            # d exp(x) / dx = exp(x); times factor_inside where |x| < 1 (1 is right)
            return grad * y * torch.where(x.abs() < 1, factor_inside, 1.0).to(y.dtype)

    return Exp.apply


VALUES = [0.0, 0.5, -0.3, 15.0]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_right_exp_passes_beside_a_large_entry(dtype):
    x = torch.tensor(VALUES, dtype=dtype, requires_grad=True)
    report = check(_exp(1.0), (x,), precise=True)
    assert report.passed, report.message()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_wrong_exp_fails_beside_a_large_entry(dtype):
    x = torch.tensor(VALUES, dtype=dtype, requires_grad=True)
    report = check(_exp(2.0), (x,), precise=True)
    assert not report.passed
    (result,) = [r for r in report.failures if r.check == "reverse"]
    # the wrong entries are those at |x| < 1 (the exact derivative there: exp(x) < e)
    assert result.where in {(i, i) for i, v in enumerate(VALUES) if abs(v) < 1}
    assert np.exp(15.0) > 1e6
