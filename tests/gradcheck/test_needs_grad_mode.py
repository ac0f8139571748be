"""A function that raises under no_grad and runs with grad, found on torch-struct.

``DependencyCRF(phi).partition`` computes with autograd inside and raises
under ``torch.no_grad()``. torch.autograd.gradcheck and gradgradcheck never
turn grad off (their finite differences call the function on the inputs
themselves, which require grad, in the caller's grad mode), and pass it.
adcheck evaluated values under no_grad (the determinism check, the finite
differences), so a right function was an error ("make it run on torch tensors
of these shapes and dtypes", which it does) and a wrong one was never judged.
A function that refuses no_grad is now evaluated with grad enabled on leaves
that require grad, as torch evaluates it, after one refusal (and one call at
the given inputs that confirms it); one that runs under no_grad still runs
there.
"""
from __future__ import annotations

import numpy as np
import pytest

from adcheck.gradcheck import check

#: the wrong Function's backward is this many times the right one
FACTOR = 1.5


def _refusing(E, body, refusals: list | None = None):
    """``body`` behind a refusal of no_grad (``refusals``: one entry per refusal)."""
    def f(x):
        if not E.is_grad_enabled():
            if refusals is not None:
                refusals.append(1)
            raise RuntimeError("this function needs grad mode")
        return body(x)
    return f


def _wrong_function(E):
    """``(sin(x) * x).sum(-1)`` as a Function whose backward is ``FACTOR`` times
    the derivative, and whose ``apply`` refuses no_grad (its forward cannot: a
    Function's forward always runs with grad off)."""
    class OffByAFactor(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return (x.sin() * x).sum(-1)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return FACTOR * g.unsqueeze(-1) * (x.cos() * x + x.sin())

        @classmethod
        def apply(cls, x):
            if not E.is_grad_enabled():
                raise RuntimeError("OffByAFactor needs grad mode")
            return super().apply(x)
    return OffByAFactor


def _x(E):
    rng = np.random.default_rng(0)
    return E.tensor(rng.standard_normal((3, 4)), dtype=E.float64, requires_grad=True)


@pytest.mark.parametrize("order", [1, 2])
def test_a_right_function_that_refuses_no_grad_passes(E, order):
    f = _refusing(E, lambda x: (x.sin() * x).sum(-1))
    report = check(f, (_x(E),), precise=True, check_forward_ad=True, order=order)
    assert report.passed, report.message()
    if E.__name__ == "torch":
        x = _x(E)
        assert E.autograd.gradcheck(f, (x,), check_forward_ad=True)
        assert order == 1 or E.autograd.gradgradcheck(f, (x,))


def test_explored_points_are_judged_not_outside_the_domain(E):
    # (the explorer called the forward under no_grad: every point "outside the domain")
    f = _refusing(E, lambda x: (x.sin() * x).sum(-1))
    report = check(f, (_x(E),), precise=True, explore=True, explore_budget=1)
    assert report.passed, report.message()
    tally = report.counts["explore"]
    assert tally["outside_domain"] == 0 and tally["passed"] > 0
    wrong = _wrong_function(E)
    found = check(wrong.apply, (_x(E),), precise=True, explore=True, explore_budget=1)
    assert not found.passed


def test_the_refusal_is_paid_once(E):
    refusals: list = []
    f = _refusing(E, lambda x: (x.sin() * x).sum(-1), refusals)
    report = check(f, (_x(E),), precise=True, check_forward_ad=True, explore=False)
    assert report.passed, report.message()
    # refused once, then once more at the given inputs, which confirms it: every
    # later evaluation had grad
    assert len(refusals) == 2
    assert report.counts["function"] > 10


def test_a_wrong_function_that_refuses_no_grad_fails_with_the_diagnosis(E):
    wrong = _wrong_function(E)
    report = check(wrong.apply, (_x(E),), precise=True)
    assert not report.passed
    (failure,) = report.failures
    assert failure.mode == "reverse"
    assert f"{FACTOR:g} times numerical" in failure.diagnosis
    assert "a constant factor in the vjp is off" in failure.diagnosis
    if E.__name__ == "torch":
        assert not E.autograd.gradcheck(wrong.apply, (_x(E),), raise_exception=False)


def test_a_function_that_runs_under_no_grad_is_evaluated_there(E):
    modes: list = []

    def f(x):
        modes.append(bool(E.is_grad_enabled()))
        return (x.sin() * x).sum(-1)
    report = check(f, (_x(E),), precise=True, explore=False)
    assert report.passed, report.message()
    # the first evaluation (the graph every vjp reuses) alone has grad
    assert modes[0] and modes.count(True) == 1 and len(modes) > 2


SOURCE = '''
import torch


def f(x):
    if not torch.is_grad_enabled():
        raise RuntimeError("this function needs grad mode")
    return (x.sin() * x).sum(-1)


class OffByAFactor(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x.sin() * x).sum(-1)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 1.5 * g.unsqueeze(-1) * (x.cos() * x + x.sin())


def wrong(x):
    if not torch.is_grad_enabled():
        raise RuntimeError("this function needs grad mode")
    return OffByAFactor.apply(x)
'''


@pytest.mark.parametrize("target, code", [("f", 0), ("wrong", 1)])
def test_the_command_judges_it(tmp_path, target, code):
    pytest.importorskip("torch", reason="the command's torch engine (pip install torch)")
    from click.testing import CliRunner

    from adcheck.cli.main import cli
    path = tmp_path / "needs_grad_mode.py"
    path.write_text(SOURCE)
    result = CliRunner().invoke(cli, ["check", f"{path}:{target}", "--engine", "torch",
                                      "--inputs", "randn(3, 4)"], catch_exceptions=False)
    assert result.exit_code == code, result.output
    assert " 0 errors" in result.stdout
    if code:
        assert "1.5 times numerical" in result.stdout
