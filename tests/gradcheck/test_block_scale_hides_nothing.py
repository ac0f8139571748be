"""Entries of 1 that err by 10 % fail beside entries of 1e12 in the same block,
and a comparison that failed at a finite error leads the failures before
the entries it could not judge.

Found by running e3nn models on a zero edge vector: ``normalize`` of a zero
row has slope 1 / eps = 1e12, and the allowance for AD's rounding was
counted in units of the block's largest entry, so a 10 % error in a
Function's gradient elsewhere in the block passed; the check was then
reported as skipped ("every step straddles a jump") and exited 3."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch)")

from adcheck.gradcheck import check  # noqa: E402


def _square(factor: float):
    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * factor * x
    return Square


def _normalized_and(square):
    def f(x):
        n = torch.nn.functional.normalize(x, dim=-1)
        return torch.cat([n, n ** 3, square.apply(x)], dim=-1)
    return f


def _x():
    x = torch.from_numpy(np.random.default_rng(0).standard_normal((4, 3)))
    x[1] = 0.0
    return x.requires_grad_()


def test_a_ten_percent_error_beside_slopes_of_1e12_fails():
    report = check(_normalized_and(_square(2.2)), (_x(),), precise=True, explore=False, seed=0)
    assert not report.passed
    first = report.failures[0]
    assert first.check == "reverse" and np.isfinite(first.max_error)
    assert "NaN" not in first.diagnosis     # (of the entries judged, not the unresolved ones)
    # the slopes of 1e12 are there: normalize's of the zero row
    numerical = report.jacobians["numerical"].blocks[0, 0]
    assert np.nanmax(np.abs(numerical)) > 1e11


def test_the_right_gradient_passes_beside_them():
    report = check(_normalized_and(_square(2.0)), (_x(),), precise=True, explore=False, seed=0)
    assert all(r.passed for r in report.results if r.check in ("reverse", "forward"))


def test_the_wrong_square_is_wrong_by_torchs_gradcheck():
    x = _x().detach().clone().requires_grad_()
    assert not torch.autograd.gradcheck(_square(2.2).apply, (x,), raise_exception=False)
    assert torch.autograd.gradcheck(_square(2.0).apply, (x,), raise_exception=False)


def test_a_judged_failure_leads_before_a_nan_output():
    def f(x):   # output 0 is NaN at x[0] = -1 (log), output 1 a wrong square
        return torch.log(x[:1]), _square(2.2).apply(x[1:])
    x = torch.tensor([-1.0, 0.5, 2.0], dtype=torch.float64, requires_grad=True)
    report = check(f, (x,), explore=False, seed=0)
    checks = [r.check for r in report.failures]
    assert "nonfinite-output" in checks
    assert checks[0] in ("reverse", "forward") and report.failures[0].out_idx == 1
