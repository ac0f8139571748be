"""The stated resolution of a low-precision comparison: the smallest relative
error an analytical side off by ``1 + rho`` everywhere would be caught at.
Only an entry larger than its tolerance can catch a relative error below
100%, so entries of rounding noise (a zero derivative computed as 1e-17)
must not state one (the float32 sweep of std's second order once stated
1e7, and corrcoef's complex64 derivative 1e4)."""
import numpy as np
import pytest

from adcheck.gradcheck.numerics.precision import resolution


def test_the_resolution_is_set_by_entries_above_their_tolerance():
    expected = np.array([[2.0, 1e-17], [0.5, 0.0]])
    tol = np.full(expected.shape, 1e-6)
    # by hand: the entries above 1e-6 are 2.0 and 0.5; the best ratio is 1e-6 / 2.0
    assert resolution(tol, expected) == pytest.approx(5e-7)


def test_rounding_noise_alone_states_no_resolution():
    expected = np.array([[3e-17, -1e-16], [0.0, 2e-18]])
    assert resolution(np.full(expected.shape, 1e-12), expected) is None


def test_an_actual_relative_error_at_the_resolution_is_caught():
    """The meaning, checked directly: an analytical side off by a factor a bit
    above 1 + resolution fails at some entry; one a bit below passes everywhere."""
    rng = np.random.default_rng(0)
    expected = rng.normal(size=(6, 5)) * np.logspace(-18, 0, 30).reshape(6, 5)
    tol = 1e-8 + 1e-6 * np.abs(expected)
    rho = resolution(tol, expected)
    assert rho is not None and rho < 1
    for factor, fails in ((1.01, True), (0.99, False)):
        actual = expected * (1 + factor * rho)
        assert bool(np.any(np.abs(actual - expected) > tol)) is fails


def test_a_zero_jacobian_in_complex64_states_no_resolution():
    """corrcoef of one variable is constant: its complex64 Jacobian is rounding
    noise, and the report says no entry can judge a relative error."""
    torch = pytest.importorskip("torch", reason="the case is torch's corrcoef; torch is "
                                "not installed")
    from adcheck import gradcheck
    x = torch.tensor([0.3 + 1.2j, -0.7 + 0.1j], dtype=torch.complex64, requires_grad=True)
    report = gradcheck.check(torch.corrcoef, (x,), precise=True, seed=0)
    stated = [r.precision for r in report.results if r.precision is not None]
    assert stated and all(p.resolution is None for p in stated)
    assert "no entry large enough" in stated[0].text()
