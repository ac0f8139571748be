"""gradcheck.harvest records torch.library custom ops that have an autograd
formula, as it records autograd.Functions."""
from __future__ import annotations

import re
import math

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from adcheck import gradcheck  # noqa: E402


@torch.library.custom_op("adcheck_harvest_test::scaled_sin", mutates_args=())
def scaled_sin(x: torch.Tensor, k: float) -> torch.Tensor:
    return torch.sin(x) * k


@scaled_sin.register_fake
def _(x, k):
    return torch.empty_like(x)


def _setup(ctx, inputs, output):
    x, k = inputs
    ctx.save_for_backward(x)
    ctx.k = k


def _backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return grad * torch.cos(x) * ctx.k * 1.01, None      # WRONG: 1% too large


scaled_sin.register_autograd(_backward, setup_context=_setup)


@torch.library.custom_op("adcheck_harvest_test::no_formula", mutates_args=())
def no_formula(x: torch.Tensor) -> torch.Tensor:
    return x * 2


class Head(torch.nn.Module):
    def forward(self, x):
        return scaled_sin(no_formula(x), 2.0) + torch.ops.adcheck_harvest_test.scaled_sin(x, 0.5)


def test_a_custom_op_with_autograd_is_harvested_and_its_error_found():
    model = torch.nn.Sequential(torch.nn.Linear(3, 3), Head())
    found = gradcheck.harvest(model, (torch.randn(2, 3),), seed=0)
    # both calls (through the op object and through torch.ops) at one path; the op
    # without an autograd formula is not a Function of the user's: not harvested
    assert [op.name for op in found.ops] == ["1:adcheck_harvest_test.scaled_sin"]
    assert found.ops[0].calls == 2
    assert found.failing() == ["1:adcheck_harvest_test.scaled_sin"]
    (report, *_) = found.reports["1:adcheck_harvest_test.scaled_sin"]
    factor = re.search(r"analytical is (\S+) times numerical", report.failures[0].diagnosis)
    assert abs(float(factor.group(1)) - 1.01) < 1e-6


def test_the_harvested_op_is_wrong_by_one_percent_by_a_central_difference():
    x = torch.tensor([0.3], dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(scaled_sin(x, 2.0), x)
    h = 1e-6
    fd = (2.0 * math.sin(0.3 + h) - 2.0 * math.sin(0.3 - h)) / (2 * h)
    assert abs(g.item() / fd - 1.01) < 1e-8
