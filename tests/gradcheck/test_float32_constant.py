"""A double-precision formula off by float32's rounding of a constant is named so.

Found on a MobileNetV3-style block (Linear, Hardswish, Linear, Hardsigmoid)
checked with `adcheck check` as written: torch's float64 hardsigmoid backward
multiplies by float32(1/6) (bench/opdb_survey.md); the failure said "a
constant factor in the vjp is off" and no more. It now says the factor is
within float32's rounding: a float32 constant in double-precision code.
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

import adcheck.refengine as E  # noqa: E402
from adcheck.gradcheck import check  # noqa: E402
from adcheck.refengine.autograd import Function  # noqa: E402


def test_torch_hardsigmoid_float64_backward_is_float32_one_sixth():
    # the premise, measured against the exact derivative 1/6 on (-3, 3)
    x = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(torch.nn.functional.hardsigmoid(x).sum(), x)
    assert g.tolist() == [float(np.float32(1 / 6))] * 3 != [1 / 6] * 3
    report = check(torch.nn.functional.hardsigmoid, (x,), precise=True)
    assert not report.passed
    assert "by no more than float32's rounding" in report.message()


class ThirdInFloat32(Function):
    """x / 3, whose backward multiplies by a float32 third."""

    @staticmethod
    def forward(ctx, x):
        return x / 3

    @staticmethod
    def backward(ctx, g):
        return g * float(np.float32(1 / 3))


class ThirdOffByAThousandth(Function):
    @staticmethod
    def forward(ctx, x):
        return x / 3

    @staticmethod
    def backward(ctx, g):
        return g * (1.001 / 3)


def test_a_custom_backward_with_a_float32_constant_is_named():
    x = E.tensor(np.linspace(-1.0, 1.0, 6), requires_grad=True)
    report = check(ThirdInFloat32.apply, (x,), precise=True)
    assert not report.passed
    assert "float32's rounding" in report.message()


def test_a_factor_off_by_more_than_float32_rounding_is_not_called_float32():
    x = E.tensor(np.linspace(-1.0, 1.0, 6), requires_grad=True)
    report = check(ThirdOffByAThousandth.apply, (x,), precise=True)
    assert "1.001 times numerical" in report.message()
    assert "float32" not in report.message()
