"""Coordinates a function is defined at but not beside (``verdict.offdomain``).

``torch.distributions.MultivariateNormal(loc, scale_tril=L)`` raises when
``L`` has a nonzero entry above its diagonal (it validates its parameters),
so a log-likelihood of ``L`` has no finite differences along those entries
at any step. A model of it was "not checked" (exit 3) where its other six
coordinates could be judged. They are judged now, and the three said to be
left out; a coordinate defined on one side, or a check whose every
coordinate is off the domain, stays unjudged.
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the constraint is torch.distributions'; "
                            "torch is not installed")

from adcheck.gradcheck import check  # noqa: E402

D = torch.distributions
X = torch.tensor([[0.3, -1.2, 0.5], [1.0, 0.1, -0.4]], dtype=torch.float64)
UPPER = [(0, 1), (0, 2), (1, 2)]


def _cholesky():
    g = torch.Generator().manual_seed(0)
    L = torch.eye(3, dtype=torch.float64) + 0.1 * torch.randn(3, 3, generator=g,
                                                             dtype=torch.float64).tril(-1)
    return L.requires_grad_()


def _loglik(L):
    return D.MultivariateNormal(torch.zeros(3, dtype=L.dtype), scale_tril=L).log_prob(X).sum()


class _Scaled(torch.autograd.Function):
    """The identity, its backward 1 % off: a planted error."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return g * 1.01


def test_the_premise_every_move_above_the_diagonal_raises_and_below_it_is_smooth():
    L = _cholesky().detach()
    for i, j in UPPER:
        for step in (1e-3, -1e-12):
            moved = L.clone()
            moved[i, j] += step
            with pytest.raises(ValueError, match="LowerCholesky"):
                _loglik(moved)
    # below the diagonal: central differences (by hand) agree with autograd
    L1 = L.clone().requires_grad_()
    (grad,) = torch.autograd.grad(_loglik(L1), L1)
    h = 1e-6
    for i, j in [(1, 0), (2, 0), (2, 1), (1, 1)]:
        up, down = L.clone(), L.clone()
        up[i, j] += h
        down[i, j] -= h
        assert abs((_loglik(up) - _loglik(down)).item() / (2 * h) - grad[i, j].item()) < 1e-7


def test_the_other_coordinates_are_judged_and_the_left_out_ones_said():
    report = check(_loglik, (_cholesky(),), precise=True, seed=0)
    assert report.passed, report.message()
    (said,) = report.partial
    assert "3 of 9 coordinates of input 0, first [0, 1], were not judged" in said
    assert "ValueError" in said and "LowerCholesky" in said


def test_a_wrong_gradient_below_the_diagonal_still_fails_on_those_entries():
    report = check(lambda L: _loglik(_Scaled.apply(L)), (_cholesky(),), precise=True,
                   check_inputs_alone=False, seed=0)
    assert not report.passed
    first = report.failures[0]
    assert first.check == "reverse" and np.isfinite(first.max_error)
    assert "1.01 times numerical" in first.diagnosis


def test_a_second_order_check_leaves_out_the_same_coordinates():
    report = check(_loglik, (_cholesky(),), precise=True, order=2, seed=0)
    assert report.passed, report.message()
    assert any("coordinates of input 0, first [0, 1], were not judged" in p
               for p in report.partial)


def test_a_coordinate_defined_on_one_side_is_not_left_out():
    """sqrt at 0: defined to the right. Its entry stays unjudged, said as a
    step leaving the domain, and the check does not pass."""
    x = torch.tensor([0.0, 1.0, 2.0], dtype=torch.float64, requires_grad=True)
    report = check(torch.sqrt, (x,), precise=True, seed=0)
    assert not report.passed
    assert not report.partial


def test_a_check_whose_every_coordinate_is_off_the_domain_does_not_pass():
    """Nothing left to judge: the check says the differences are NaN, as before."""
    def only_at_zero(x):
        if torch.any(x != 0):
            raise ValueError("x must be zero")
        return x * 2
    x = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    report = check(only_at_zero, (x,), precise=True, seed=0, explore=False)
    assert not report.passed
    assert not report.partial
    assert any(r.check == "nonfinite" and r.mode == "numerical" for r in report.failures)


def test_a_coordinate_that_moves_into_nan_on_both_sides_is_left_out():
    """No exception: NaN on both sides of x[1] = 0 (sqrt(-x**2)) in the second
    output only; the first output's entries in x[1] are judged (zero)."""
    def f(x):
        return x[0] ** 3 + 0 * x[1], torch.sqrt(-x[1] ** 2) + x[0]
    x = torch.tensor([0.7, 0.0], dtype=torch.float64, requires_grad=True)
    report = check(f, (x,), precise=True, seed=0, explore=False, check_inputs_alone=False)
    (said,) = report.partial
    assert "1 of 2 coordinates of input 0, first [1]" in said and "gave NaN outputs" in said
    assert report.passed, report.message()
    off = report.jacobians["numerical"].off_domain
    assert [key for key in off if key != "cause"] == [(1, 0)]   # (output 1, input 0)
    assert off[1, 0].tolist() == [[False, True]]
