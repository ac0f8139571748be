"""A Function whose backward applies another Function that reads the model's
parameters through the model, not through its arguments (xitorch's ``quad``:
its backward integrates the integrand's vjp with another ``quad``, whose own
backward calls the module), had its second order checked with the model's own
parameters: the check's double-precision copies were put in the model's place
around the outer backward only, and the inner Function's backward (the double
backward) of a float32 model raised a dtype mismatch ("mat1 and mat2 must have
the same dtype" in xitorch's, "addmv input tensors must have the same dtype"
here): an error of the check, where the formulas are right."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch)")

from adcheck import gradcheck  # noqa: E402


class Outer(torch.autograd.Function):
    """``y_b = sum_j (W x_b + c)_j``, the layer read through the module (its
    parameters passed too, as xitorch passes a module's)."""

    @staticmethod
    def forward(ctx, module, x, weight, bias):
        ctx.module = module
        ctx.save_for_backward(x, weight, bias)
        return module.lin(x).sum(-1)

    @staticmethod
    def backward(ctx, g):
        x, weight, bias = ctx.saved_tensors
        return (None, *Inner.apply(ctx.module, x, g, weight, bias))


class Inner(torch.autograd.Function):
    """Outer's vjp, ``gx_b = g_b sum_j W[j]``, ``gW[j] = sum_b g_b x_b`` and
    ``gc_j = sum_b g_b``; its own backward reads ``W`` through the module
    again, as it runs."""

    @staticmethod
    def forward(ctx, module, x, g, weight, bias):
        ctx.module = module
        ctx.save_for_backward(x, g)
        w = module.lin.weight
        return (g[:, None] * w.sum(0), (g[:, None] * x).sum(0).expand_as(w).clone(),
                g.sum().expand_as(bias).clone())

    @staticmethod
    def backward(ctx, ggx, ggw, ggc):
        x, g = ctx.saved_tensors
        column = ctx.module.lin.weight.sum(0)     # (a matmul: no promotion of a float32 W)
        dx = g[:, None] * ggw.sum(0)
        dg = ggx @ column + (ggw.sum(0) * x).sum(-1) + ggc.sum()
        dw = (ggx * g[:, None]).sum(0).expand(ctx.module.lin.weight.shape).clone()
        return None, dx, dg, dw, None


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(2, 2)     # float32, as a model's parameters are

    def forward(self, x):
        return Outer.apply(self, x, self.lin.weight, self.lin.bias)


def _x():
    torch.manual_seed(1)
    return torch.randn(3, 2, requires_grad=True)


def test_the_formulas_are_right_by_torchs_gradgradcheck():
    model = Model().double()
    x = _x().double().detach().requires_grad_()
    w, c = model.lin.weight, model.lin.bias

    def f(x, w, c):
        return Outer.apply(model, x, w, c)
    assert torch.autograd.gradcheck(f, (x, w, c))
    assert torch.autograd.gradgradcheck(f, (x, w, c))


def test_the_second_order_check_runs_on_the_checks_copies():
    model = Model()
    before = model.lin.weight.detach().clone()
    found = gradcheck.harvest(model, (_x(),), order=2, seed=0)
    assert found.errors == {}
    (name,) = [n for n in found.reports if "Outer" in n]
    assert all(r.passed for r in found.reports[name]), found.reports[name][0].message()
    assert not any("does not run in double precision" in n for n in found.notes.get(name, []))
    assert torch.equal(model.lin.weight, before)
    assert model.lin.weight.dtype == torch.float32
