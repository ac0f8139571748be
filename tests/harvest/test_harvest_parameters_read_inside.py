"""A Function handed the model's parameters that also reads them through the
model, as adjoint solvers do (torchsde's sdeint_adjoint, torchdiffeq's
odeint_adjoint: the parameters go to ``apply`` so that the backward returns
their gradients, the forward and the backward read them from the module).

Harvested, its check passed copies of the parameters that neither side read:
finite differences and the backward both gave zero for them, and the check
passed having judged nothing (torchsde's adjoint "passed" so, its parameter
gradients off by the solver's discretization unseen). The check's tensors
now stand in for the model's parameters while the Function's forward and
backward run, and the model is as it was afterwards."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from adcheck import gradcheck  # noqa: E402


def _scale_by_module(factor):
    """y = x * exp(theta), theta read from the module; its backward differentiates
    a recomputation with the module's theta with respect to the theta it was
    handed, as torchsde's adjoint does; ``factor`` on theta's gradient."""
    class ScaleByModule(torch.autograd.Function):
        @staticmethod
        def forward(ctx, module, x, theta):
            ctx.module = module
            ctx.save_for_backward(x, theta)
            return x * torch.exp(module.theta)        # the module's, not the argument

        @staticmethod
        def backward(ctx, g):
            x, theta = ctx.saved_tensors
            gx = g * torch.exp(ctx.module.theta) if ctx.needs_input_grad[1] else None
            gtheta = None
            if ctx.needs_input_grad[2]:   # (as torchsde differentiates only the adjoint
                with torch.enable_grad():  # parameters that require grad)
                    y = x * torch.exp(ctx.module.theta)    # read again, as an adjoint does
                    (gtheta,) = torch.autograd.grad(y, (theta,), g, allow_unused=True)
            return None, gx, None if gtheta is None else factor * gtheta
    return ScaleByModule


class Scaler(torch.nn.Module):
    def __init__(self, function):
        super().__init__()
        self.theta = torch.nn.Parameter(torch.tensor([0.3, -0.2, 0.1], dtype=torch.float64))
        self.function = function

    def forward(self, x):
        return self.function.apply(self, x, self.theta).sum()


def _x():
    return torch.tensor(np.random.default_rng(0).standard_normal((4, 3)), requires_grad=True)


def _theta_check(factor):
    model = Scaler(_scale_by_module(factor))
    before = model.theta
    found = gradcheck.harvest(model, (_x(),), seed=0)
    (report,) = found.reports["(root):ScaleByModule"]
    assert model.theta is before and isinstance(model.theta, torch.nn.Parameter)
    return report


def test_a_right_backward_is_judged_on_the_parameter_and_passes():
    report = _theta_check(1.0)
    assert report.passed, report.message()
    theta = report.input_names.index("theta")
    # the check saw theta move the output: d/dtheta_j sum_i x_ij exp(theta_j) != 0
    block = report.jacobians["numerical"][0, theta]
    assert np.abs(block).max() > 0.1


def test_a_wrong_parameter_gradient_fails():
    # (it passed before: both sides of theta's block were zero, the argument being
    # a copy that neither the forward nor the backward's recomputation read)
    report = _theta_check(2.0)
    failed = {f.in_name for f in report.failures}
    assert "theta" in failed and "x" not in failed


def test_a_backward_that_raises_leaves_the_model_as_it_was():
    class Raising(_scale_by_module(1.0)):
        @staticmethod
        def backward(ctx, g):
            raise RuntimeError("no backward today")
    model = Scaler(Raising)
    before = model.theta
    found = gradcheck.harvest(model, (_x(),), seed=0)
    assert "no backward today" in found.errors["(root):Raising"]
    assert model.theta is before


def test_a_backward_raising_when_a_parameter_does_not_require_grad_leaves_the_model_as_it_was():
    # differentiating theta unconditionally raises when only x requires grad (each input
    # alone, verdict.alone): the swap that backward left in place was taken for the
    # model's own parameter by the next call's swap, and put back in its place
    class Unconditional(_scale_by_module(1.0)):
        @staticmethod
        def backward(ctx, g):
            x, theta = ctx.saved_tensors
            with torch.enable_grad():
                y = x * torch.exp(ctx.module.theta)
                (gtheta,) = torch.autograd.grad(y, (theta,), g)
            return None, g * torch.exp(ctx.module.theta), gtheta
    model = Scaler(Unconditional)
    before = model.theta
    found = gradcheck.harvest(model, (_x(),), seed=0)
    assert model.theta is before and isinstance(model.theta, torch.nn.Parameter)
    (report,) = found.reports["(root):Unconditional"]
    (alone,) = [r for r in report.failures if r.check == "alone"]
    assert "does not require grad" in alone.diagnosis
