"""A double-precision formula that reads a constant rounded to float32.

``torch.tensor(0.1)`` without a dtype is float32: a Function that saves its
width so and divides by it in the backward (diffsort's ``NormalCDF`` does,
found by harvesting its sorting network) has a gradient off by float32's
rounding, carried through the formula (up to 2.7e-7 relative there, where
the width is squared inside an exponential). A precise check fails it, as it
should, and said nothing more; it now names the cause. The same Function
saving the width in the input's dtype passes."""
from __future__ import annotations

import math

import numpy as np
import pytest

from adcheck import refengine as E
from adcheck.gradcheck import check
from adcheck.refengine.autograd import Function

WIDTH = 0.1


class GaussianCdf(Function):
    """The normal CDF of x / WIDTH; ``narrow``: the backward's width in float32."""

    narrow = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 + 0.5 * E.erf(x / WIDTH / math.sqrt(2))

    @classmethod
    def backward(cls, ctx, g):
        (x,) = ctx.saved_tensors
        width = float(np.float32(WIDTH)) if cls.narrow else WIDTH
        return g / width / math.sqrt(2 * math.pi) * E.exp(-0.5 * (x / width) ** 2)


class WideGaussianCdf(GaussianCdf):
    narrow = False


class ApproximateCdf(GaussianCdf):
    """A backward 0.1 % off: a formula error, not a rounding."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 1.001 * g / WIDTH / math.sqrt(2 * math.pi) * E.exp(-0.5 * (x / WIDTH) ** 2) \
            + 1e-3 * x


def _x():
    return E.tensor(np.linspace(-0.3, 0.3, 12), requires_grad=True)


def test_a_width_rounded_to_float32_is_named():
    report = check(GaussianCdf.apply, (_x(),), precise=True, explore=False)
    (failure,) = report.failures
    assert "float32's rounding" in failure.diagnosis
    assert "reads a value rounded to float32" in failure.diagnosis


def test_in_double_precision_it_passes_and_a_real_error_is_not_so_named():
    assert check(WideGaussianCdf.apply, (_x(),), precise=True, explore=False).passed
    report = check(ApproximateCdf.apply, (_x(),), precise=True, explore=False)
    (failure,) = [f for f in report.failures if f.check == "reverse"]
    assert "float32" not in (failure.diagnosis or "")


def test_torch_tensor_without_dtype_in_a_torch_function():
    torch = pytest.importorskip("torch", reason="a torch Function (pip install torch)")

    class Saved(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, torch.tensor(WIDTH))       # float32
            return 0.5 + 0.5 * torch.erf(x / WIDTH / math.sqrt(2))

        @staticmethod
        def backward(ctx, g):
            x, width = ctx.saved_tensors
            return g / width / math.sqrt(2 * math.pi) * torch.exp(-0.5 * (x / width) ** 2)
    x = torch.linspace(-0.3, 0.3, 12, dtype=torch.float64, requires_grad=True)
    (failure,) = check(Saved.apply, (x,), precise=True, explore=False).failures
    assert "reads a value rounded to float32" in failure.diagnosis


class JitterySquare(Function):
    """x**2 whose backward is off by up to 1e-7 relative, by an amount that
    changes completely when x moves by an ulp (sin of x * 1e16): the error of
    a formula that loses digits at the point, as large as float32's rounding
    at every entry."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g * (1 + 1e-7 * E.sin(x * 1e16))


def test_an_error_the_ad_values_own_rounding_makes_is_not_called_float32():
    # (torch's ormqr at an explored point |x| = 400 failed so, and was named float32)
    a = np.array([0.7, 1.3, -0.4, 0.9])
    x = E.tensor(a, requires_grad=True)
    (g,) = E.autograd.grad(JitterySquare.apply(x).sum(), x)
    relative = np.abs(g.numpy() - 2 * a) / np.abs(2 * a)    # against d/dx x**2 = 2x
    assert np.all(relative > 1e-10) and np.all(relative < 2.0 ** -20)
    report = check(JitterySquare.apply, (x,), precise=True, seed=0, explore=False)
    assert not report.passed
    (failure,) = report.failures
    assert "the AD values themselves move" in (failure.detail or ""), failure
    assert failure.diagnosis is None or "float32" not in failure.diagnosis
