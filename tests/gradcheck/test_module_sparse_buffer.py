"""A module holding a sparse buffer (cvxpylayers' ``CvxpyLayer`` keeps its
problem data as ``sparse_csr`` buffers) is checked in its inputs and
parameters, the sparse buffer held as the module holds it. Before, the
buffer was made an input of the check, which takes dense tensors only, and
nothing was checked ("input 3 is a sparse tensor ... pass x.to_dense()",
exit 3) for a tensor the user never passes."""
from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch)")

from adcheck.gradcheck import check  # noqa: E402


def _cube(factor: float):
    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 3 * x ** 2 * factor   # factor 1 is right

    return Cube


def _model(factor: float, dtype):
    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            generator = torch.Generator().manual_seed(0)
            self.lin = torch.nn.Linear(3, 3).to(dtype)
            dense = torch.randn(3, 3, generator=generator, dtype=dtype)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")   # (torch: sparse CSR is in beta)
                self.register_buffer("P", dense.to_sparse_csr())

        def forward(self, x):
            return self.P @ _cube(factor).apply(self.lin(x))

    return Model()


def _x(dtype):
    return torch.randn(3, dtype=dtype, generator=torch.Generator().manual_seed(1))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_a_module_with_a_sparse_buffer_is_checked(dtype):
    report = check(_model(1.0, dtype), (_x(dtype),), precise=True)
    assert report.passed, report.message()
    names = {r.in_name for r in report.results}
    assert "lin.weight" in names and "P" not in names


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_a_wrong_gradient_beside_a_sparse_buffer_fails(dtype):
    report = check(_model(2.0, dtype), (_x(dtype),), precise=True)
    assert not report.passed
    assert any(r.in_name == "lin.weight" for r in report.failures)
