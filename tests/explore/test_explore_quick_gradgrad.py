"""The quick screen of a second-order check moves the point of the first
derivative, which differentiates inside: the moved inputs must require grad
and be evaluated with grad. Without them every moved evaluation raised, no
one-sided quotient formed, and the screen passed every point whatever the
double backward (179 of 179 screens in one sweep task)."""
from __future__ import annotations

import numpy as np
import pytest

from adcheck.gradcheck.core.secondorder import first_derivative
from adcheck.gradcheck.engines import engine_for
from adcheck.gradcheck.explore import quick

torch = pytest.importorskip("torch", reason="the planted double backward is a torch Function")

EPS = float(np.finfo(np.float64).eps)


class _Cos(torch.autograd.Function):
    """cos whose own derivative is 10 % off: sin's double backward through it is wrong."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.cos(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return -g * torch.sin(x) * 1.1


class _Sin(torch.autograd.Function):
    """sin with a right first derivative whose own derivative is ``_Cos``'s."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sin(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * _Cos.apply(x)


def _second_order_screen(func):
    x = torch.tensor([0.3, -1.2, 2.0], dtype=torch.float64, requires_grad=True)
    first, ins = first_derivative(func, (x,), None, np.random.default_rng(0))
    ins = list(ins)
    return quick.screen(engine_for(ins), first, ins, list(range(len(ins))), {"reverse"},
                        np.random.default_rng(0), EPS)


def test_a_double_backward_ten_percent_off_goes_to_the_full_check():
    assert _second_order_screen(_Sin.apply) == "judge"


def test_a_right_double_backward_passes_the_screen():
    assert _second_order_screen(torch.sin) == "pass"
