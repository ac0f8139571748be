""""analytical couples entries that do not depend on each other" was said of
blocks whose error is the reverse: numerical nonzero where analytical is zero
(cvxpylayers at an exact active-set kink: worst entry numerical 0.5,
analytical 3.4e-12, beside a solver's small values where numerical is zero).
Entries that carry a small share of the error are no wrong axis; the words
now say what the worst entry shows. A tie whose worst entry is a kink of
|x0 - x1| (one-sided -1 and 1, numerical 0) is named a tie, not a coupling:
its one-sided slopes are read over the step actually taken.
"""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from adcheck.gradcheck import check  # noqa: E402
from adcheck.gradcheck.verdict.diagnosis import diagnose  # noqa: E402


def _diagnosis(expected, actual):
    return diagnose(expected, actual, np.full(expected.shape, 1e-10), "reverse", False,
                    False) or ""


def test_small_values_beside_a_dropped_entry_are_no_coupling():
    # a projection at a tie: differences average 0 and 1 at [0, 0], the formula
    # gives one side; a solver's residue of 1e-7 where the Jacobian is zero
    numerical = np.diag([0.5, 1.0, 1.0])
    analytical = np.diag([3.4e-12, 1.0, 1.0])
    analytical[0, 2] = analytical[2, 1] = 1e-7
    found = _diagnosis(numerical, analytical)
    assert "couples" not in found
    assert "analytical is zero at 1 entry where numerical is not" in found
    assert "[0, 0]: numerical 0.5, analytical 3.4e-12" in found


def test_a_wrong_axis_is_still_a_coupling():
    # y = x.sum(1) of a 2 x 3 input, its backward broadcasting g.sum() to every entry
    numerical = np.kron(np.eye(2), np.ones((1, 3)))
    assert "analytical couples 6 (output, input) entries" in _diagnosis(numerical,
                                                                        np.ones((2, 6)))


class DroppedWithResidue(torch.autograd.Function):
    """y = x / 2, whose backward drops the first element's gradient and adds an
    iterative solver's residue of 1e-7 that couples the last two."""

    @staticmethod
    def forward(ctx, x):
        return x / 2

    @staticmethod
    def backward(ctx, g):
        out = g / 2
        out[0] = 0.0
        out[2:] = out[2:] + 1e-7 * g[2:].flip(0)
        return out


def test_a_dropped_gradient_with_residue_is_said_so():
    x = torch.tensor([0.3, -1.2, 0.8, 2.0], dtype=torch.float64, requires_grad=True)
    assert not torch.autograd.gradcheck(DroppedWithResidue.apply, (x,), raise_exception=False)
    report = check(DroppedWithResidue.apply, (x,), precise=True, explore=False, seed=0)
    (failure,) = report.failures
    assert "couples" not in failure.diagnosis
    assert "analytical is zero at 1 entry where numerical is not" in failure.diagnosis
    assert "numerical 0.5" in failure.diagnosis   # d(x / 2)/dx, by hand


class ReluAndAbsOfDifference(torch.autograd.Function):
    """(relu(x0 - x1), |x0 - x1|), whose backward takes the side below a tie."""

    @staticmethod
    def forward(ctx, x):
        t = x[0] - x[1]
        ctx.save_for_backward(t)
        return torch.stack([torch.relu(t), t.abs()])

    @staticmethod
    def backward(ctx, g):
        (t,) = ctx.saved_tensors
        s = g[0] * (t > 0).double() + g[1] * torch.where(t > 0, 1.0, -1.0).double()
        return torch.stack([s, -s])


def test_a_tie_at_inputs_whose_steps_round_is_named_a_tie():
    # 0.3 + 1e-6 - 0.3 is not 1e-6: the one-sided slopes are read over the step taken
    x = torch.tensor([0.3, 0.3], dtype=torch.float64, requires_grad=True)
    with torch.no_grad():   # the evidence: |x0 - x1| moves by h either way
        h = 1e-4
        up = ReluAndAbsOfDifference.apply(x + torch.tensor([h, 0.0]))[1]
        down = ReluAndAbsOfDifference.apply(x - torch.tensor([h, 0.0]))[1]
    assert float(up) == pytest.approx(h) and float(down) == pytest.approx(h)
    report = check(ReluAndAbsOfDifference.apply, (x,), precise=True, explore=False, seed=0)
    (failure,) = report.failures
    assert "couples" not in failure.diagnosis
    assert "not differentiable (a kink or a tie)" in failure.diagnosis
    assert "derivatives -1 (from below) and 1 (from above)" in failure.diagnosis
