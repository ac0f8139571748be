""""analytical is K times numerical ... a constant factor in the vjp is off"
was said of a backward that clamps its gradient (3 x^2 returned as
min(3 x^2, 1)) at x of 10 beside entries of 0.1 to 0.3: the factor fitted
to the one large entry (1/300) left the others off by at most a thousandth
of the block's error, and was named. Those others were right before the
factor and wrong after it: no one factor explains the block, and the
diagnosis now names the entries that differ. A factor that explains every
entry (beside a solver's tiny couplings, qpth's) is still named.
"""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from adcheck.gradcheck import check  # noqa: E402
from adcheck.gradcheck.verdict.diagnosis import diagnose  # noqa: E402


def _clamped_cube(c):
    class ClampedCube(torch.autograd.Function):
        """x^3, whose backward clamps the gradient 3 x^2 to at most ``c``."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * torch.clamp(3 * x ** 2, max=c)
    return ClampedCube.apply


@pytest.mark.parametrize("values,clamp,clamped", [
    ([10.0, 0.1, 0.2, -0.3], 1.0, 1),            # one large entry: the factor 1/300 fitted
    ([[12.0, 0.3, -0.2], [0.5, -0.4, 0.1]], 2.0, 1),
    ([-9.0, 8.0, 0.25, 0.5], 1.0, 2),
])
def test_a_clamped_gradient_is_no_constant_factor(values, clamp, clamped):
    x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    grad = 3 * x.detach() ** 2                     # d x^3 / dx, by hand
    assert int((grad > clamp).sum()) == clamped and int((grad < clamp).sum()) > 1
    report = check(_clamped_cube(clamp), (x,), precise=True, explore=False, seed=0)
    (failure,) = report.failures
    assert "times numerical" not in failure.diagnosis
    assert "constant factor" not in failure.diagnosis
    assert f"only {clamped} of {x.numel()} nonzero entries differ" in failure.diagnosis


def test_a_factor_of_every_entry_is_still_named():
    x = torch.tensor([10.0, 0.1, 0.2, -0.3], dtype=torch.float64, requires_grad=True)

    class HalfCube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t ** 3

        @staticmethod
        def backward(ctx, g):
            (t,) = ctx.saved_tensors
            return g * 1.5 * t ** 2               # half of 3 t^2
    report = check(HalfCube.apply, (x,), precise=True, explore=False, seed=0)
    assert "analytical is 1/2 times numerical" in report.failures[0].diagnosis


def test_a_factor_that_puts_right_entries_wrong_is_not_named():
    e = np.diag([300.0, 0.03, 0.12, 0.27])
    a = np.diag([1.0, 0.03, 0.12, 0.27])          # the first entry clamped, the rest right
    found = diagnose(e, a, np.full((4, 4), 1e-9), "reverse", False, False)
    assert "times numerical" not in found and "only 1 of 4" in found
