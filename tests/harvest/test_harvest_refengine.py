"""gradcheck.harvest on refengine: Functions of a refengine model named by
module path, its parameters named, the model left as it was."""
from __future__ import annotations

import numpy as np

import adcheck.refengine as E
from adcheck import gradcheck
from adcheck.gradcheck.harvest.api import record
from adcheck.refengine import nn
from adcheck.refengine.autograd import Function


class Scaled(Function):
    """y = x * x * w; its w-gradient is WRONG by a factor 3."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x * x * w

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return 2 * x * w * g, (x * x * g).sum(0) * 3


class Tanh(Function):
    @staticmethod
    def forward(ctx, x):
        y = x.tanh()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * (1 - y * y)


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(E.ones(3) * 0.5)

    def forward(self, x):
        return Scaled.apply(Tanh.apply(x), self.w)


def test_a_refengine_model_names_the_wrong_function_and_its_parameter():
    E.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 3), Layer())
    x = E.randn(2, 3)
    before = [p.detach().numpy().copy() for p in model.parameters()]
    found = gradcheck.harvest(model, (x,), seed=0)
    assert [p.grad for p in model.parameters()] == [None, None, None]
    assert all(np.array_equal(a, p.detach().numpy()) for a, p in zip(before, model.parameters()))
    assert found.failing() == ["1:Scaled"] and "1:Tanh" in found.reports
    (report,) = found.reports["1:Scaled"]
    assert [f.in_name for f in report.failures] == ["1.w"]
    assert found.localisation == "the whole model fails; at fault on their own: 1:Scaled"


def test_the_wrong_gradient_is_three_times_a_central_difference():
    # independent of adcheck: the harvested inputs, a difference quotient written here
    model = nn.Sequential(Layer())
    x = E.randn(2, 3, dtype=E.float64)
    ((app, *_),) = [op.applications for op in record(model, (x,)).ops
                    if op.name == "0:Scaled"]
    xs, w = (np.asarray(a.detach().numpy()) for a in app.args)
    h, v = 1e-6, np.ones_like(xs)
    fd = np.array([((xs * xs * (w + h * e)) - (xs * xs * (w - h * e))).sum() / (2 * h)
                   for e in np.eye(3)])
    wt = E.tensor(w, requires_grad=True)
    (Scaled.apply(E.tensor(xs), wt) * E.tensor(v)).sum().backward()
    assert np.allclose(wt.grad.numpy(), 3 * fd)
