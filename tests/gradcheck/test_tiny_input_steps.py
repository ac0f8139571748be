"""A failure along an input coordinate smaller than the differences' steps
(``verdict.tinyinputs``).

Rotation code switches from a small-angle series to its closed form at a
threshold (roma at 1e-6); at a rotation vector of 1e-8 the check's
differences step across it and fail a formula that is the exact derivative
of what the forward computes there, with words for a formula bug (roma's
``rotvec_to_rotmat`` read "the vjp rounds its result", pypose's se3 "wrong
axis"). The failure now says what differences at steps below the
coordinate show. The independent evidence is the function itself, written
so that its value near the point is known exactly.
"""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from adcheck.gradcheck import check  # noqa: E402

THRESHOLD = 1e-6


def series_switch(x):
    """1, the cosine's series to its first term, below the threshold; cos(x) above:
    the two differ by x**2 / 2 in value (below rounding at 1e-8), by sin(x) in slope."""
    return torch.where(x.abs() < THRESHOLD, torch.ones_like(x), torch.cos(x))


class DropsTheTerm(torch.autograd.Function):
    """A forward that computes 0 for |x| < 1e-2 where x is meant (a series
    that drops its first term), and a backward of the function meant."""

    @staticmethod
    def forward(ctx, x):
        return torch.where(x.abs() < 1e-2, torch.zeros_like(x), x)

    @staticmethod
    def backward(ctx, g):
        return g


def _tiny():
    return torch.tensor([1e-8, -2e-8, 3e-8], dtype=torch.float64, requires_grad=True)


def test_the_independent_evidence():
    x = _tiny().detach()
    h = 1e-9
    # below the threshold the function is 1: its slope is exactly 0 there...
    assert torch.equal(series_switch(x + h), torch.ones(3, dtype=torch.float64))
    # ...and the autograd derivative is that slope
    x = _tiny()
    (g,) = torch.autograd.grad(series_switch(x).sum(), x)
    assert torch.equal(g, torch.zeros(3, dtype=torch.float64))
    # a step of the check's size (1e-6 and up) crosses the threshold, where cos's slope
    # -sin(x) is -x: differences see about -3e-8 at the third coordinate
    assert abs(float(x[2]) + 1.1e-6) > THRESHOLD


def test_differences_below_the_coordinate_too_coarse_to_settle():
    report = check(series_switch, (_tiny(),), precise=True, explore=False, seed=0)
    (failure,) = [r for r in report.failures if r.check == "reverse"]
    said = failure.diagnosis
    assert "smaller than the differences' steps" in said
    # (after the comparison's own words, which it does not contradict)
    assert "too coarse to settle a difference of" in said


def test_differences_below_the_coordinate_that_repeat_the_check_say_the_forward_may_differ():
    report = check(DropsTheTerm.apply, (_tiny(),), precise=True, explore=False, seed=0)
    (failure,) = [r for r in report.failures if r.check == "reverse"]
    assert "give 0 and 0 too: that is the slope of the function as computed there" in \
        failure.diagnosis


class Doubled(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 1.0

    @staticmethod
    def backward(ctx, g):
        return 2 * g          # wrong: 1


def test_a_wrong_formula_at_inputs_of_ordinary_size_is_not_said_so():
    x = torch.tensor([0.5, -1.5, 2.0], dtype=torch.float64, requires_grad=True)
    assert not torch.autograd.gradcheck(Doubled.apply, (x,), raise_exception=False)
    report = check(Doubled.apply, (x,), precise=True, explore=False, seed=0)
    (failure,) = [r for r in report.failures if r.check == "reverse"]
    assert "smaller than the differences' steps" not in (failure.diagnosis or "")
