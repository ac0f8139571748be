"""Each input alone requiring grad (``verdict.alone``).

A backward that fills one input's gradient only when another input needs
one (``if ctx.needs_input_grad[0]: dl, dh = ...``, pytorch_wavelets' SFB2D
pattern) is right whenever every input requires grad, which is how every
check ran it: ``adcheck check`` of a module whose data batch does not require
grad passed (exit 0) while its parameter gets no gradient in training. The
independent evidence is torch's own gradcheck with only that input requiring
grad, and plain autograd's ``.grad``."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from adcheck import refengine as E  # noqa: E402
from adcheck.gradcheck import check, gradcheck  # noqa: E402


class GatedAdd(torch.autograd.Function):
    """low + 2 high, whose backward tests the wrong input's flag."""

    @staticmethod
    def forward(ctx, low, high):
        return low + 2 * high

    @staticmethod
    def backward(ctx, g):
        dl = dh = None
        if ctx.needs_input_grad[0]:      # wrong: high's gradient needs needs_input_grad[1]
            dl, dh = g, 2 * g
        return dl, dh


class RightAdd(GatedAdd):
    @staticmethod
    def backward(ctx, g):
        return (g if ctx.needs_input_grad[0] else None,
                2 * g if ctx.needs_input_grad[1] else None)


class OtherOrder(torch.autograd.Function):
    """x * y, whose backward sums in another order when only y needs a gradient:
    the same values to rounding."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return (x * y).sum(0)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        if ctx.needs_input_grad[0]:
            return g * y, g * x
        return None, (x.flip(0) * g).flip(0)


class ScaledWhenAlone(torch.autograd.Function):
    """x * y, whose gradient of y is halved when x does not need one."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        scale = 1.0 if ctx.needs_input_grad[0] else 0.5
        return g * y, scale * g * x


def _pair(requires=(True, True)):
    torch.manual_seed(0)
    return tuple(torch.randn(3, 4, dtype=torch.float64, requires_grad=r) for r in requires)


def test_the_independent_evidence():
    # both requiring grad: torch's gradcheck passes the gated backward (the blind spot)
    assert torch.autograd.gradcheck(GatedAdd.apply, _pair())
    # only high requiring grad: torch's gradcheck fails it, and autograd gives no gradient
    low, high = _pair((False, True))
    assert not torch.autograd.gradcheck(GatedAdd.apply, (low, high), raise_exception=False)
    GatedAdd.apply(low, high).sum().backward()
    assert high.grad is None
    assert torch.autograd.gradcheck(RightAdd.apply, (low, high))
    x, y = _pair((False, True))
    assert not torch.autograd.gradcheck(ScaledWhenAlone.apply, (x, y), raise_exception=False)
    assert torch.autograd.gradcheck(OtherOrder.apply, (x, y))


def test_a_gradient_given_only_when_another_input_needs_one_fails():
    report = check(GatedAdd.apply, _pair(), seed=0, explore=False)
    assert not report.passed
    (failure,) = report.failures
    assert failure.check == "alone" and failure.in_idx == 1
    assert "alone requiring grad its gradient is None" in failure.diagnosis
    assert "needs_input_grad" in failure.diagnosis


def test_a_gradient_that_changes_when_alone_fails():
    report = check(ScaledWhenAlone.apply, _pair(), seed=0, explore=False)
    (failure,) = report.failures
    assert failure.check == "alone" and failure.in_idx == 1
    # half of the full graph's gradient
    np.testing.assert_allclose(failure.actual, 0.5 * failure.expected)


@pytest.mark.parametrize("function", [RightAdd, OtherOrder])
def test_right_backwards_pass(function):
    report = check(function.apply, _pair(), seed=0, explore=False)
    assert report.passed, report.message()
    alone = [r for r in report.results if r.check == "alone"]
    assert sorted(r.in_idx for r in alone) == [0, 1]


def test_gradcheck_keeps_torchs_checks():
    # torch.autograd.gradcheck's counterpart has no such check: it passes, as torch's does
    assert gradcheck(GatedAdd.apply, _pair())
    found = check(GatedAdd.apply, _pair(), seed=0, explore=False, check_inputs_alone=False)
    assert found.passed and not any(r.check == "alone" for r in found.results)


def test_a_refengine_function_gated_the_same_way_fails():
    class RefGated(E.autograd.Function):
        @staticmethod
        def forward(ctx, low, high):
            return low + 2 * high

        @staticmethod
        def backward(ctx, g):
            if ctx.needs_input_grad[0]:
                return g, 2 * g
            return None, None

    rng = np.random.default_rng(0)
    inputs = tuple(E.tensor(rng.standard_normal((2, 3)), dtype=E.float64, requires_grad=True)
                   for _ in range(2))
    report = check(RefGated.apply, inputs, seed=0, explore=False)
    assert [(r.check, r.in_idx) for r in report.failures] == [("alone", 1)]


def forces(x, w):
    """-dE/dx of an energy E = sum(w * x**4) / 4, taken inside (a force field):
    it needs x to require grad, and refuses to run otherwise."""
    with torch.enable_grad():
        energy = (w * x ** 4).sum() / 4
        (gx,) = torch.autograd.grad(energy, x, create_graph=True)
    return -gx


def test_a_function_that_refuses_an_input_not_requiring_grad_is_not_failed_for_it():
    x, w = _pair()
    with pytest.raises(RuntimeError):     # the function's own refusal, without adcheck
        forces(x.detach(), w)
    report = check(forces, (x, w), seed=0, explore=False)
    assert report.passed, report.message()
    assert [r.in_idx for r in report.results if r.check == "alone"] == [0]
    assert any("input 1 not judged alone" in note for note in report.partial)
