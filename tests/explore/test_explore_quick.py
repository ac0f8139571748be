"""The quick pass (``explore="quick"``): its screen clears a correct formula
in a few evaluations, sends a wrong one to the full check, and calls a
jump or a NaN at a kink not differentiable, never a failure."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from adcheck.gradcheck import check  # noqa: E402
from adcheck.gradcheck.engines import engine_for  # noqa: E402
from adcheck.gradcheck.explore import quick  # noqa: E402
from explore_zoo import ZOO  # noqa: E402

EPS = float(np.finfo(np.float64).eps)


def _x(*values):
    return torch.tensor(values, dtype=torch.float64, requires_grad=True)


def _screen(func, *inputs, modes=("reverse",)):
    ins = list(inputs)
    return quick.screen(engine_for(ins), func, ins, list(range(len(ins))), set(modes),
                        np.random.default_rng(0), EPS)


class _Scaled(torch.autograd.Function):
    """sin with a backward 10 % off: a formula wrong at every point."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sin(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * torch.cos(x) * 1.1


@pytest.mark.parametrize("modes", [("reverse",), ("forward",), ("reverse", "forward")])
def test_a_correct_smooth_formula_passes_the_screen(modes):
    assert _screen(torch.sin, _x(0.3, -1.2, 2.0), modes=modes) == "pass"
    assert _screen(lambda a, b: a * b, _x(0.3, -1.2), _x(2.0, 0.5), modes=modes) == "pass"


def test_a_formula_ten_percent_off_goes_to_the_full_check():
    assert _screen(_Scaled.apply, _x(0.3, -1.2, 2.0)) == "judge"
    report = check(_Scaled.apply, (_x(0.3, -1.2, 2.0),), seed=0)
    assert not report.passed    # what the full check, at any point, then says


def test_kinks_ties_and_jumps_are_never_sent_as_failures():
    assert _screen(torch.relu, _x(0.0, 0.0, 1.0)) == "pass"          # relu'(0) = 0 lies between
    assert _screen(torch.max, _x(0.7, 0.7, -1.0)) == "pass"          # a pick at a tie
    assert _screen(torch.sign, _x(0.0, 0.5)) == "nondiff"            # a jump: grows like 1/h
    # NaN at a kink (torch's hypot(0, 0)): the one-sided quotients differ
    assert _screen(torch.hypot, _x(0.0, 1.0), _x(0.0, 2.0)) == "nondiff"
    # NaN where the derivative exists (sinc's 0/0): the one-sided quotients agree
    sinc = next(e for e in ZOO if e.name == "sinc").function(torch, "buggy")
    assert _screen(sinc, _x(0.0, 0.5)) == "judge"


def test_outside_the_domain_is_counted_not_judged():
    assert _screen(torch.log, _x(-1.0, 2.0)) == "domain"


# (softplus: a backward written exp(-x) / (1 + exp(-x)), inf / inf past exp's overflow,
# found at 1000 since the quick pass has that magnitude; before, only --explore found it)
@pytest.mark.parametrize("name", ["sinc", "x2logx", "max", "prod", "sinh_minus_x", "abs2",
                                  "softplus"])
def test_the_quick_pass_finds_the_zoo_bugs_at_zeros_ties_and_magnitudes(name):
    entry = next(e for e in ZOO if e.name == name)
    buggy = check(entry.function(torch, "buggy"), entry.inputs(torch, 0), seed=0,
                  precise=True, explore="quick")
    assert not buggy.passed and buggy.counts["explore"]["findings"]
    fixed = check(entry.function(torch, "fixed"), entry.inputs(torch, 0), seed=0,
                  precise=True, explore="quick")
    assert fixed.passed, fixed.message()
    assert fixed.counts["explore"]["tried"] <= 9     # the few points of the quick pass


class _SignNanAtZero(torch.autograd.Function):
    """sign, whose backward is 0/0 at 0 (NaN) and 0 elsewhere: the function
    jumps at 0 with one-sided quotients of one sign on both sides."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sign(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (x / x - 1)


def test_a_nan_formula_at_a_jump_is_not_differentiable_without_a_full_check():
    # the quotients (sign(h u) - 0) / h grow like 1/h on both sides, with one sign:
    # their extrapolated ends agree, which sent the point to the full check (whose
    # one-sided verdicts then said "not differentiable"); a jump says it at once
    assert _screen(_SignNanAtZero.apply, _x(0.0, 0.5)) == "nondiff"
    report = check(_SignNanAtZero.apply, (_x(0.3, 0.5),), seed=0, precise=True,
                   explore="quick")
    tally = report.counts["explore"]
    assert report.passed and tally["not_differentiable"] >= 1 and not tally["findings"]
    # and a NaN where the function is smooth (sinc's 0/0) is still judged in full
    sinc = next(e for e in ZOO if e.name == "sinc").function(torch, "buggy")
    assert _screen(sinc, _x(0.0, 0.5)) == "judge"
