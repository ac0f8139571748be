"""check(..., same_as=op): an in-place variant judged by its op's autograd derivatives.

The claim of ``gradcheck.core.sameas`` is that comparing a variant's AD
Jacobians with its op's (already checked against differences) proves what
differences would: every planted in-place bug below is caught by it, and the
independent judge, finite differences of the variant itself (the ordinary
check, no ``same_as``), fails it too. Where the twin cannot judge (other
values, a narrow dtype, a twin that raises) the check is the ordinary one.
"""
from __future__ import annotations

import numpy as np
import pytest

from adcheck import refengine as E
from adcheck.gradcheck.api import check


def _x(shape=(3, 4), dtype=E.float64, seed=0):
    values = np.random.default_rng(seed).uniform(0.3, 1.7, shape)
    return E.tensor(values, dtype=dtype, requires_grad=True)


def sin(x):
    return E.sin(x)


def sin_inplace(x):
    return x.clone().sin_()


class SinInplaceReadsOverwritten(E.autograd.Function):
    """An in-place sin whose backward reads its input after the forward overwrote
    it (the classic in-place bug): cos(sin(x)) instead of cos(x)."""

    @staticmethod
    def forward(ctx, x):
        buffer = x.detach().clone()
        ctx.saved = buffer
        buffer.sin_()            # the saved tensor now holds sin(x)
        return E.sin(x.detach())

    @staticmethod
    def backward(ctx, g):
        return g * E.cos(ctx.saved)


def _sin_function(value=1.0, slope=1.0, graph=True):
    """A Function computing ``value * sin(x)``, whose vjp is ``slope * cos(x) g``
    (without a graph of ``x`` when not ``graph``)."""

    class Sin(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return value * E.sin(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * E.cos(x if graph else x.detach()) * slope
    return Sin


#: right values, a vjp one part in a million too large
SinOffByPpm = _sin_function(slope=1 + 1e-6)
#: right values and first derivative, no graph of x in the vjp: its second
#: derivative is wrong (0 where -sin(x) g u is expected)
SinFirstOrderOnly = _sin_function(graph=False)
#: 2 sin(x) forward with sin's vjp: a wrong forward, not a wrong formula
DoubledForward = _sin_function(value=2.0)


def test_a_right_variant_passes_against_its_op_in_every_mode():
    x = _x()
    for order in (1, 2):
        report = check(sin_inplace, (x,), precise=True, same_as=sin, order=order,
                       check_forward_ad=True)
        assert report.passed, report.message()
        assert report.jacobians["same_as"].mode == "same_as"
        assert "numerical" not in report.jacobians   # no differences were taken
        assert "sin" in report.jacobians["same_as"].note
        # the ordinary check agrees
        assert check(sin_inplace, (x,), precise=True, order=order,
                     check_forward_ad=True).passed


def test_a_right_complex_variant_passes_against_its_op():
    x = E.tensor(np.array([0.3 + 0.4j, -1.1 + 0.2j, 0.7 - 0.9j]), dtype=E.complex128,
                 requires_grad=True)
    report = check(lambda t: t.clone().exp_(), (x,), precise=True, same_as=E.exp,
                   check_forward_ad=True)
    assert report.passed and "same_as" in report.jacobians


@pytest.mark.parametrize("bad", [SinInplaceReadsOverwritten, SinOffByPpm])
def test_a_wrong_vjp_with_right_values_is_caught_by_its_op_and_by_differences(bad):
    x = _x()
    report = check(bad.apply, (x,), precise=True, same_as=sin)
    assert not report.passed
    (first,) = [r for r in report.failures if r.check == "reverse"][:1]
    assert first.against == "same_as"
    assert "differs from the autograd Jacobian of same_as" in report.message()
    assert not check(bad.apply, (x,), precise=True).passed   # the independent judge


def test_a_missing_second_derivative_is_caught_at_order_two():
    x = _x()
    report = check(SinFirstOrderOnly.apply, (x,), precise=True, same_as=sin, order=2)
    assert not report.passed and "same_as" in report.jacobians
    assert not check(SinFirstOrderOnly.apply, (x,), precise=True, order=2).passed
    assert check(SinFirstOrderOnly.apply, (x,), precise=True, same_as=sin).passed


def test_a_twin_with_other_values_leaves_the_ordinary_check():
    x = _x()

    def shifted(t):
        return E.sin(t) + 1e-9

    report = check(sin_inplace, (x,), precise=True, same_as=shifted)
    assert report.passed and "same_as" not in report.jacobians
    assert "differs from the function's beyond rounding" in report.jacobians["numerical"].note

    # a forward twice too large with the op's own vjp: its AD Jacobian equals the
    # op's, so only the values can tell, and differences then judge it
    report = check(DoubledForward.apply, (x,), precise=True, same_as=sin)
    assert not report.passed and "same_as" not in report.jacobians


def test_only_a_check_judged_by_its_twin_leaves_exploring_to_the_twin():
    x = _x()
    judged = check(sin_inplace, (x,), precise=True, same_as=sin, explore="quick")
    assert "same_as" in judged.jacobians and "explore" not in judged.counts

    def shifted(t):
        return E.sin(t) + 1e-9

    ordinary = check(sin_inplace, (x,), precise=True, same_as=shifted, explore="quick")
    assert "same_as" not in ordinary.jacobians and "explore" in ordinary.counts


def test_narrow_inputs_and_a_raising_twin_leave_the_ordinary_check():
    report = check(sin_inplace, (_x(dtype=E.float32),), precise=True, same_as=sin)
    assert "same_as" not in report.jacobians
    assert "float32" in report.jacobians["numerical"].note

    def raises(t):
        raise RuntimeError("no")

    report = check(sin_inplace, (_x(),), precise=True, same_as=raises)
    assert report.passed and "same_as raised RuntimeError" in report.jacobians["numerical"].note


def test_same_as_must_be_a_function():
    with pytest.raises(ValueError, match="same_as must be a function"):
        check(sin_inplace, (_x(),), same_as=3)


def test_on_torch_a_variant_is_judged_by_its_op():
    torch = pytest.importorskip("torch", reason="torch is an optional extra")
    x = torch.rand(3, 4, dtype=torch.float64, requires_grad=True)
    report = check(lambda t: t.clone().sin_(), (x,), precise=True, same_as=torch.sin,
                   check_forward_ad=True, order=2)
    assert report.passed and "same_as" in report.jacobians

    class Bad(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            saved = t.detach().clone()
            ctx.saved = saved
            return saved.sin_().clone()   # the saved tensor now holds sin(t)

        @staticmethod
        def backward(ctx, g):
            return g * ctx.saved.cos()

    assert not check(Bad.apply, (x,), precise=True, same_as=torch.sin).passed
    assert not torch.autograd.gradcheck(Bad.apply, (x,), raise_exception=False)
