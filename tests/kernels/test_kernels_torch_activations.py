"""torch's own activations in bfloat16 and float16, judged as kernels.

Correct formulas all, so each must pass against a reference of ordinary ops,
at 1,024 inputs drawn as a model's activations are (the sizes where one entry
in hundreds meets a hard case). Two hard cases found this way, each a false
alarm before:

- a derivative computed from the rounded output (torch's sigmoid backward
  ``y (1 - y)`` and tanh's ``1 - y**2``; near y = 1 in bfloat16 the output's
  rounding is most of the entry) or from intermediates of the input's size
  (silu's and mish's jvps near the root of their derivative) is the
  derivative at a point a rounding away, which the reference, computed from
  x, does not show: the rounding model's term 5 was not applied to kernels;
- a bfloat16 draw holds x = -3.0 or 3.0 exactly, hardswish's kinks, where the
  reference's central differences average the two sides (its own check
  failed, and it was blamed), and where torch's hardswish takes the other
  side's derivative than the reference's clamp.
"""
from __future__ import annotations

import math
import warnings

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

import torch.nn.functional as F  # noqa: E402

from adcheck.gradcheck import kernels  # noqa: E402

ACTIVATIONS = {
    "sigmoid": (torch.sigmoid, lambda x: 1 / (1 + torch.exp(-x))),
    "tanh": (torch.tanh, lambda x: 1 - 2 / (torch.exp(2 * x) + 1)),
    "silu": (F.silu, lambda x: x * torch.sigmoid(x)),
    "mish": (F.mish, lambda x: x * torch.tanh(torch.log1p(torch.exp(x)))),
    "gelu": (F.gelu, lambda x: 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))),
    "softplus": (F.softplus, lambda x: torch.log1p(torch.exp(x))),
    "hardswish": (F.hardswish, lambda x: x * torch.clamp(x + 3, 0, 6) / 6),
    "relu6": (F.relu6, lambda x: torch.clamp(x, 0, 6)),
    "hardsigmoid": (F.hardsigmoid, lambda x: torch.clamp(x / 6 + 0.5, 0, 1)),
}


def _draw(dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (2 * torch.randn(4, 256, generator=g)).to(dtype)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_torch_activation_passes_at_a_models_sizes(name, dtype):
    kernel, reference = ACTIVATIONS[name]
    x = _draw(dtype).requires_grad_()
    report = kernels.check(kernel, (x,), against=reference)
    assert report.passed, kernels.summary(report)


def _with_kinks(dtype):
    x = _draw(dtype)
    x[0, :4] = torch.tensor([-3.0, 3.0, -6.0, 6.0])
    return x.requires_grad_()


def test_kinks_are_named_and_judged_by_their_sides():
    report = kernels.check(F.hardswish, (_with_kinks(torch.bfloat16),),
                           against=ACTIVATIONS["hardswish"][1])
    assert report.passed, kernels.summary(report)
    note = " ".join(report.coverage["kernel"])
    assert "flat index 0 (-3)" in note and "flat index 1 (3)" in note
    # the stated resolution is the rounding's, not the width of the kinks' brackets
    for r in report.results:
        if r.precision is not None and r.check in ("reverse", "forward"):
            assert r.precision.resolution < 0.05


class _KernelConvention(torch.autograd.Function):
    """hardswish with ``slope`` times the derivative inside (-3, 3), and ``at_kink``
    as the derivative at x = -3 (its one-sided derivatives there are 0 and -0.5)."""

    slope, at_kink = 1.0, 0.0

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return F.hardswish(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        xf = x.float()
        inside = (xf > -3) & (xf < 3)
        d = torch.where(inside, _KernelConvention.slope * (2 * xf + 3) / 6,
                        (xf >= 3).float())
        d = torch.where(xf == -3, torch.full_like(xf, _KernelConvention.at_kink), d)
        return (g.float() * d).to(x.dtype)


@pytest.fixture
def convention():
    yield _KernelConvention
    _KernelConvention.slope, _KernelConvention.at_kink = 1.0, 0.0


@pytest.mark.parametrize("at_kink", [0.0, -0.5, -0.25])
def test_either_side_or_between_passes_at_a_kink(convention, at_kink):
    convention.at_kink = at_kink
    report = kernels.check(convention.apply, (_with_kinks(torch.float16),),
                           against=ACTIVATIONS["hardswish"][1])
    assert report.passed, kernels.summary(report)


@pytest.mark.parametrize("wrong", [("at_kink", 1.0), ("slope", 1.05)],
                         ids=["outside the sides at a kink", "a wrong slope beside them"])
def test_a_wrong_kernel_fails_at_inputs_with_kinks(convention, wrong):
    setattr(convention, *wrong)
    report = kernels.check(convention.apply, (_with_kinks(torch.float16),),
                           against=ACTIVATIONS["hardswish"][1])
    assert not report.passed
    assert "reference of" not in report.name     # the kernel's failure, not the reference's


class _WrongAtZero(torch.autograd.Function):
    """ReLU whose derivative at 0 is 2: outside its one-sided derivatives 0 and 1."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * torch.where(x == 0, torch.full_like(x, 2.0), (x > 0).to(x.dtype))


def test_a_reference_outside_its_sides_is_still_blamed():
    x = _draw(torch.bfloat16)
    x[0, 0] = 0.0
    report = kernels.check(F.relu, (x.requires_grad_(),), against=_WrongAtZero.apply)
    assert not report.passed
    assert "the reference of relu" in report.name


def test_one_sided_derivatives_of_hardswish_at_its_kinks():
    """Independent of the check: hardswish's derivative is 0 left of -3,
    (2x + 3) / 6 inside, 1 right of 3."""
    from adcheck.gradcheck.kernels.kinks import _one_sided
    x = torch.tensor([-3.0, 3.0, 1.0], dtype=torch.float64)
    reference = ACTIVATIONS["hardswish"][1]
    for c, (left, right) in enumerate([(0.0, -0.5), (1.5, 1.0), (5 / 6, 5 / 6)]):
        lo, hi = _one_sided(reference, (x,), 0, c)
        assert lo[0][c] == pytest.approx(left, abs=1e-7)
        assert hi[0][c] == pytest.approx(right, abs=1e-7)


def test_a_reference_that_overflows_in_the_dtype_warns_nothing():
    """exp(2 x) overflows float16 beyond x = 5.5: the reference run in the dtype
    is infinite there, its rounding unbounded, and that is no NumPy overflow
    warning of ours in the user's output."""
    g = torch.Generator().manual_seed(0)
    x = (2 * torch.randn(4, 64, generator=g)).to(torch.float16).requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        report = kernels.check(lambda x: F.softplus(x, beta=2.0), (x,),
                               against=lambda x: torch.log1p(torch.exp(2 * x)) / 2)
    assert report.passed, kernels.summary(report)


def _pool_reference(x):
    return torch.maximum(x[..., 0::2], x[..., 1::2])


def test_max_pool_at_ties_passes():
    """After a ReLU, bfloat16 activations tie at 0 in most pools: torch.maximum
    (the reference) splits a tie's gradient in half, which its own check
    accepts (the central quotient is a half too), max_pool gives it to one
    entry; either is a side of the tie."""
    g = torch.Generator().manual_seed(0)
    x = torch.relu(torch.randn(2, 3, 16, generator=g)).to(torch.bfloat16).requires_grad_()
    report = kernels.check(lambda x: F.max_pool1d(x, 2), (x,), against=_pool_reference)
    assert report.passed, kernels.summary(report)
    assert "more)" in " ".join(report.coverage["kernel"])    # many ties, a few named


class _ShrunkPool(torch.autograd.Function):
    """max_pool1d(x, 2) whose gradient is 0.9 where a pool's maximum is unique."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return F.max_pool1d(x, 2)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        a, b = x[..., 0::2], x[..., 1::2]
        scale = torch.where(a == b, torch.ones_like(g), torch.full_like(g, 0.9))
        out = torch.zeros_like(x)
        out[..., 0::2] = g * scale * (a >= b)
        out[..., 1::2] = g * scale * (b > a)
        return out


def test_a_wrong_pool_still_fails_beside_the_ties():
    g = torch.Generator().manual_seed(0)
    x = torch.relu(torch.randn(2, 3, 16, generator=g)).to(torch.bfloat16).requires_grad_()
    report = kernels.check(_ShrunkPool.apply, (x,), against=_pool_reference)
    assert not report.passed


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("name", ["sigmoid", "tanh", "silu", "mish"])
def test_torch_activation_passes_at_second_order(name, dtype):
    """Their double backwards reuse the forward's rounded output (tanh's
    ``-2 y (1 - y**2)``): the second derivative at the input moved until the
    output moves by its rounding, the first order's term 5 carried over."""
    kernel, reference = ACTIVATIONS[name]
    g = torch.Generator().manual_seed(0)
    x = (2 * torch.randn(4, 64, generator=g)).to(dtype).requires_grad_()
    report = kernels.check(kernel, (x,), against=reference, order=2)
    assert report.passed, kernels.summary(report)
