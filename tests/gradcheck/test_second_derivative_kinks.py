"""A C1 function whose second derivative jumps (ELU, ``relu(x)**2``, ``abs``
inside a smooth map) is differentiable, and its right gradient must pass.

Its central differences do not err as ``h**2, h**4, ...`` near a jump of the
second derivative: a sum of many ELU units a weight moves through errs as a
power of the step between 1 and 2. Richardson's highest order at the last
level was judged only against the parent it was made from, whose last move it
had just removed, so the estimate fell 8 to 60 times below the error and the
check failed right gradients (zuko's UNAF flow, an ELU network integrated by
Gauss-Legendre: 1.7e-11 off against a tolerance of 5.3e-12).
"""
import mpmath
import numpy as np
import pytest

from adcheck.gradcheck.numerics.precise import SAFETY
from adcheck.gradcheck.numerics.richardson import extrapolate

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("power", [1.0, 1.3, 1.6, 2.5, 3.0])
@pytest.mark.parametrize("levels", [2, 3, 4, 6])
def test_an_estimate_covers_an_error_that_is_no_even_power_of_the_step(power, levels):
    # quotients 1 + c h**p at h = 2**-k: the derivative is exactly 1
    steps = 2.0 ** -np.arange(levels)
    diffs = [np.array([[1.0 + 1e-3 * h ** power]]) for h in steps]
    noises = [np.zeros((1, 1)) for _ in steps]
    best, estimate = extrapolate(diffs, noises)
    assert abs(best.item() - 1.0) <= SAFETY * estimate.item()


def _elu_sum(columns: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(8, 300, columns, dtype=torch.float64, generator=g)
    w = torch.randn(columns, dtype=torch.float64, generator=g)
    return a, w


def _mp_derivative(a: np.ndarray, w: np.ndarray, row: int, col: int):
    """d/dw[col] of sum elu(a[row] @ w) / 300, by mpmath's own differences at 40 digits."""
    mpmath.mp.dps = 40

    def f(t):
        total = mpmath.mpf(0)
        for unit in a[row]:
            z = sum(mpmath.mpf(float(u)) * (mpmath.mpf(float(v)) + (t if j == col else 0))
                    for j, (u, v) in enumerate(zip(unit, w)))
            total += z if z > 0 else mpmath.expm1(z)
        return total / 300

    return mpmath.diff(f, mpmath.mpf(0))


@pytest.mark.parametrize("columns, seed, check_seed", [(20, 1, 0), (20, 24, 0), (60, 8, 8)])
def test_a_sum_of_elu_units_passes(columns, seed, check_seed):
    from adcheck.gradcheck import check

    a, w = _elu_sum(columns, seed)
    w.requires_grad_()

    def f(w):
        return torch.nn.functional.elu(a @ w).sum(-1) / 300

    report = check(f, (w,), precise=True, jacobian="dense", seed=check_seed)
    assert report.passed, report.message()


def test_the_elu_sums_autograd_is_right():
    # the premise of the test above, on the entries it failed at before
    # (max error 7.9e-10 at [6, 16] for columns 20, seed 1)
    a, w = _elu_sum(20, 1)
    w.requires_grad_()
    y = torch.nn.functional.elu(a @ w).sum(-1) / 300
    grad = torch.autograd.grad(y[6], w)[0][16].item()
    exact = _mp_derivative(a.numpy(), w.detach().numpy(), 6, 16)
    assert abs(grad - float(exact)) <= 1e-15 + 1e-13 * abs(float(exact))
