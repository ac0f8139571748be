"""A failure at given inputs on a kink or a tie says so.

relu at zeros failed with "analytical is zero: the vjp returns no gradient
(None or zeros) for an input the function uses", and the optimal transport
cost at tied costs (POT's emd2) with no word of the tie: both are points
where no derivative exists (one-sided derivatives differ), and the formula
gives one of them, as a subgradient convention does. The failure stays (as
torch's gradcheck fails there too) and says where it is."""
from __future__ import annotations

import numpy as np
import pytest

import adcheck.refengine as E
from adcheck.gradcheck import check

KINK = "the given inputs sit where the function is not differentiable (a kink or a tie)"


def _t(a):
    return E.tensor(np.asarray(a, dtype=np.float64), dtype=E.float64, requires_grad=True)


def test_relu_at_zeros():
    report = check(E.relu, (_t(np.zeros((3, 4))),), precise=True)
    assert not report.passed
    (failure,) = report.failures
    assert failure.diagnosis.startswith(KINK)
    assert "one-sided derivatives 0 (from below) and 1 (from above)" in failure.diagnosis
    assert "the reverse side gives 0, between them" in failure.diagnosis


def test_a_max_over_tied_entries():
    # (amax splits the gradient among tied entries, which central differences agree
    # with; max with dim gives it to one entry, as torch.max does)
    def row_max(x):
        return E.max(x, dim=-1)[0]
    report = check(row_max, (_t([[1.0, 1.0, 0.5], [0.2, 0.3, 0.3]]),), precise=True)
    assert not report.passed
    assert report.failures[0].diagnosis.startswith(KINK)


def test_a_wrong_formula_at_a_smooth_point_keeps_its_diagnosis():
    class Twice(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return E.sin(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * g * E.cos(x)
    report = check(Twice.apply, (_t(np.random.default_rng(0).standard_normal((3, 4))),),
                   precise=True)
    assert "2 times numerical" in report.failures[0].diagnosis


def test_a_jump_is_not_called_a_kink():
    # sign(x) * 2 + x has a jump at 0: its quotients grow as the step shrinks
    def jump(x):
        return E.sign(x) * 2.0 + x
    x = _t([0.0, 0.5, -1.5])
    report = check(jump, (x,), precise=True)
    assert all(not (f.diagnosis or "").startswith(KINK) for f in report.failures)


def test_torch_agrees_relu_at_zero_has_no_derivative():
    torch = pytest.importorskip("torch", reason="torch's own gradcheck as the judge")
    x = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    assert not torch.autograd.gradcheck(torch.relu, (x,), raise_exception=False)


class IsotonicPair(E.autograd.Function):
    """The non-decreasing fit of two values (their mean where they decrease), whose
    backward pools them when they are within 1e-8, as jaxopt's isotonic regression
    does: at [1, 1 + 1e-9] the fit is the identity (the values increase), its
    Jacobian I, and the backward's [[.5, .5], [.5, .5]] is wrong there."""

    @staticmethod
    def forward(ctx, y):
        ctx.save_for_backward(y)
        a, b = (float(v) for v in y.detach().numpy())
        fit = [a, b] if a <= b else [(a + b) / 2] * 2
        return E.tensor(np.array(fit), dtype=E.float64)

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        a, b = (float(v) for v in y.detach().numpy())
        if b - a <= 1e-8:
            return E.ones(2, dtype=E.float64) * g.sum() / 2
        return g


def test_a_near_tie_closer_than_the_steps_is_not_called_a_kink():
    y = _t([1.0, 1.0 + 1e-9])
    # the fit there is y itself (the values increase), so its Jacobian is I
    assert np.array_equal(IsotonicPair.apply(y).detach().numpy(), y.detach().numpy())
    report = check(IsotonicPair.apply, (y,), precise=True, explore=False)
    (failure,) = report.failures
    assert not failure.diagnosis.startswith(KINK)
    assert failure.diagnosis.startswith("the given inputs are within 1.0e-09 of a tie "
                                        "(input 0 coordinates 0 and 1)")


def test_a_kink_beside_an_unrelated_near_value_is_a_kink_not_a_near_tie():
    # relu(2 - x) is elementwise: x[0] = 2 sits on its kink, and x[1], 1e-9 below
    # it, is another output's input; no output depends on both, so no tie
    x = _t([2.0, 2.0 - 1e-9, 1.0])
    report = check(lambda v: E.relu(2.0 - v), (x,), precise=True, explore=False)
    (failure,) = report.failures
    assert failure.where == (0, 0)
    assert failure.diagnosis.startswith(KINK)
    assert "one-sided derivatives -1 (from below) and 0 (from above)" in failure.diagnosis


def test_relu_2_minus_x_has_those_one_sided_slopes_at_2():
    h = 1e-7
    f = lambda v: max(2.0 - v, 0.0)   # noqa: E731
    assert (f(2.0) - f(2.0 - h)) / h == pytest.approx(-1.0)
    assert (f(2.0 + h) - f(2.0)) / h == 0.0


# a kink whose sides curve: where(x >= 0, x*x + x, 3x) and its like at x = 0,
# with the derivative each gives there from each side (by hand)
CURVED = {
    "square": (lambda v: E.where(v >= 0.0, v * v + v, 3.0 * v), 3.0, 1.0),
    "sin_exp": (lambda v: E.where(v >= 0.0, E.sin(v) + v * v, E.exp(3.0 * v) - 1.0), 3.0, 1.0),
    "left_taken": (lambda v: E.where(v > 0.0, v, 3.0 * v + v * v), 3.0, 1.0),
}


@pytest.mark.parametrize("name", sorted(CURVED))
def test_a_kink_with_curved_sides_is_a_kink_as_a_straight_one(name):
    f, below, above = CURVED[name]
    # independent: one-sided quotients approach those derivatives, off by O(h) from
    # them at any step (the sides curve)
    g = lambda v: float(f(E.tensor(np.array([float(v)]), dtype=E.float64)).numpy()[0])  # noqa: E731
    for h in (1e-3, 1e-5):
        assert abs((g(0.0) - g(-h)) / h - below) < 10 * h
        assert abs((g(h) - g(0.0)) / h - above) < 10 * h
    assert g(0.0) == 0.0
    report = check(f, (_t([-0.7, 0.0, 0.4, 1.3]),), precise=True, explore=False)
    (failure,) = report.failures
    assert failure.diagnosis.startswith(KINK), failure.diagnosis
    assert f"one-sided derivatives {below:g} (from below) and {above:g} (from above)" in \
        failure.diagnosis


class WrongAtTheKink(E.autograd.Function):
    """where(x >= 0, x*x + x, 3x), whose backward gives ``VALUE`` at exactly 0
    (outside both one-sided derivatives, 3 and 1: no subgradient, a wrong formula;
    0.999 is 1e-3 below 1, where the nearer step's quotient is 1e-6 above it)."""
    VALUE = 5.0

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return E.where(x >= 0.0, x * x + x, 3.0 * x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        slope = E.where(x > 0.0, 2.0 * x + 1.0, 3.0 * E.ones_like(x))
        return g * E.where(x == 0.0, WrongAtTheKink.VALUE * E.ones_like(x), slope)


@pytest.mark.parametrize("value", [5.0, 3.001, 0.999, 0.0, -1.0])
def test_a_wrong_value_at_a_curved_kink_is_not_called_a_kink(value, monkeypatch):
    monkeypatch.setattr(WrongAtTheKink, "VALUE", value)
    report = check(WrongAtTheKink.apply, (_t([-0.7, 0.0, 0.4, 1.3]),), precise=True,
                   explore=False)
    (failure,) = report.failures
    assert failure.where == (1, 1)
    assert not (failure.diagnosis or "").startswith(KINK), failure.diagnosis


def test_a_curved_kink_of_the_first_derivative_is_named_at_second_order():
    # f = x**2 + x**3 above 0, -x**2 below: f' = 2x + 3x**2 | -2x has a kink at 0
    # whose upper side curves; f'' is 2 above and -2 below (by hand), and the double
    # backward takes the upper branch (as nflows' spline at its tail bound does)
    def f(v):
        return E.where(v >= 0.0, v * v + v * v * v, -(v * v))
    g = _t([0.5, 0.8, -0.3, 1.1])   # grad_outputs: the gradient's entry 1 is 0.8 f'
    report = check(f, (_t([-0.7, 0.0, 0.4, 1.3]),), order=2, grad_outputs=(g,),
                   precise=True, explore=False)
    (failure,) = [r for r in report.failures if r.in_idx == 0]
    assert failure.where == (1, 1)
    assert failure.diagnosis.startswith(
        "the given inputs sit where the first derivative is not differentiable")
    assert "one-sided derivatives -1.6 (from below) and 1.6 (from above)" in failure.diagnosis
    assert "the reverse side gives 1.6, between them" in failure.diagnosis


def test_fast_mode_names_a_kink_as_the_slow_check_does():
    # fast mode explains a failing projection by the slow Jacobians; at a kink it
    # said "only 1 of 4 nonzero entries differ ... wrong for some elements only"
    f, below, above = CURVED["square"]
    report = check(f, (_t([-0.7, 0.0, 0.4, 1.3]),), fast_mode=True, explore=False)
    (failure,) = report.failures
    assert failure.check == "fast-reverse"
    assert failure.diagnosis.startswith(KINK), failure.diagnosis
    assert f"one-sided derivatives {below:g} (from below) and {above:g} (from above)" in \
        failure.diagnosis
    report = check(E.relu, (_t(np.zeros((2, 3))),), fast_mode=True, explore=False)
    assert report.failures[0].diagnosis.startswith(KINK), report.failures[0].diagnosis


def test_fast_mode_keeps_a_wrong_value_at_a_kink_wrong():
    report = check(WrongAtTheKink.apply, (_t([-0.7, 0.0, 0.4, 1.3]),), fast_mode=True,
                   explore=False)
    (failure,) = report.failures
    assert failure.check == "fast-reverse"
    assert not (failure.diagnosis or "").startswith(KINK), failure.diagnosis
