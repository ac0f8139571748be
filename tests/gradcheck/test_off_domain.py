"""Coordinates whose steps leave the function's domain (``verdict.offdomain``).

``torch.distributions.MultivariateNormal(loc, scale_tril=L)`` raises when
``L`` has a nonzero entry above its diagonal (it validates its parameters),
so a log-likelihood of ``L`` has no finite differences along those entries
at any step. A model of it was "not checked" (exit 3) where its other six
coordinates could be judged. They are judged now, and the three said to be
left out; a coordinate defined on one side, or a check whose every
coordinate is off the domain, stays unjudged. A ``Dirichlet``'s value, on the
simplex within 1e-6, and a point 1e-7 from ``log``'s edge, where the first
steps leave the domain and smaller moves do not, are differenced within the
band that holds.
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
    # (validated explicitly: importing zuko turns torch's default off for the process)
    return D.MultivariateNormal(torch.zeros(3, dtype=L.dtype), scale_tril=L,
                                validate_args=True).log_prob(X).sum()


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
    _Off.error = 0.01
    report = check(lambda L: _loglik(_Off.apply(L)), (_cholesky(),), precise=True,
                   check_inputs_alone=False, seed=0)
    _Off.error = 0.0
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
    masks = report.jacobians["numerical"].off_domain.masks
    assert list(masks) == [(1, 0)]   # (output 1, input 0)
    assert masks[1, 0].tolist() == [[False, True]]


class _Off(torch.autograd.Function):
    """The identity, its backward off by ``error`` (relative)."""

    error = 0.0

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return g * (1 + _Off.error)


A = torch.tensor([1.5, 2.0, 3.0], dtype=torch.float64)
P = torch.tensor([0.2, 0.3, 0.5], dtype=torch.float64)


def _dirichlet(error: float):
    _Off.error = error
    return lambda a, p: D.Dirichlet(a, validate_args=True).log_prob(_Off.apply(p))


def test_a_simplex_value_is_differenced_within_its_tolerance():
    # the premise: a step of 1e-4 leaves the support, one of 1e-9 does not;
    # the derivative in p is (a - 1) / p (the log-density's closed form)
    for step, raises in ((1e-4, True), (1e-9, False)):
        moved = P.clone()
        moved[0] += step
        if raises:
            with pytest.raises(ValueError, match="Simplex"):
                D.Dirichlet(A, validate_args=True).log_prob(moved)
        else:
            D.Dirichlet(A, validate_args=True).log_prob(moved)
    p = P.clone().requires_grad_()
    (grad,) = torch.autograd.grad(D.Dirichlet(A).log_prob(p), p)
    assert torch.allclose(grad, (A - 1) / P, rtol=1e-14)
    report = check(_dirichlet(0.0), (A.clone().requires_grad_(), P.clone().requires_grad_()),
                   precise=True, seed=0, check_inputs_alone=False)
    assert report.passed, report.message()
    (said,) = report.partial
    assert "3 of 3 coordinates of input 1, first [0], were differenced only within" in said


def test_an_error_of_1e_5_in_a_simplex_value_s_gradient_fails():
    report = check(_dirichlet(1e-5), (A.clone().requires_grad_(), P.clone().requires_grad_()),
                   precise=True, seed=0, check_inputs_alone=False)
    _Off.error = 0.0
    assert not report.passed
    assert report.failures[0].in_idx == 1 and "constant factor" in report.failures[0].diagnosis


@pytest.mark.parametrize("error", [0.0, 1e-6])
def test_a_domain_edge_closer_than_the_first_step(error):
    """log(x - e) at 1e-7 from e: the first steps (2**-11 of x) cross the edge;
    d/dx = 1 / (x - e) = 1e7 by differences within it."""
    edge = torch.tensor([1.0 - 1e-7, 0.5], dtype=torch.float64)
    _Off.error = error
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    report = check(lambda x: torch.log(_Off.apply(x) - edge), (x,), precise=True, seed=0,
                   check_inputs_alone=False)
    _Off.error = 0.0
    assert report.passed == (error == 0.0), report.message()
    if error:
        assert "1.000001 times numerical" in report.failures[0].diagnosis
    else:
        (said,) = report.partial
        assert "1 of 2 coordinates of input 0, first [0], were differenced only within" in said



def test_a_complex_entry_off_the_domain_is_counted_as_one():
    """Its real and imaginary coordinates both raise when moved: one entry of
    two left out, named by its index; z[0]'s derivative (2 z[0], conjugate
    Wirtinger) is judged."""
    def f(z):
        if z[1] != 0:
            raise ValueError("z[1] must be 0")
        return (z[0] * z[0]).real + z[1].real
    z = torch.tensor([1.0 + 0.5j, 0j], dtype=torch.complex128, requires_grad=True)
    report = check(f, (z,), precise=True, seed=0, explore=False, check_inputs_alone=False)
    assert report.passed, report.message()
    (said,) = report.partial
    assert said.startswith("1 of 2 coordinates of input 0, first [1], were not judged")
    assert "ValueError (z[1] must be 0)" in said
