"""A second-order explored point whose first derivative is below the forward's
rounding is judged by the forward's own second differences (``forwardwitness``).

tan and tanh save their result y and differentiate 1 + y*y and 1 - y*y
(PyTorch's formulas, kept). At z = -29.43+26.80j, tan(z) is i to the last bit:
the formula at that y drops the real part of the derivative (1.4e-23; y's
rounding is 1.1e-16), and its derivative 2 y (1 + y*y) moves by 9e-16 when y
moves by one ulp. The second-order check there compared two results of that
rounding, 3e-23 apart, at a tolerance of 1e-31, and the sweep (``adcheck
ops``) failed tan and tanh complex128 at their tails once the explorer's
second order judged anything. First order passes those points: the
forward's rounding over the step is its allowance. Real findings stay
failures: the old pow formula at an exponent of 0 (the forward's differences
resolve the 1 / x it drops) and a NaN double backward at 0.
"""
from __future__ import annotations

from types import SimpleNamespace

import mpmath
import numpy as np
import pytest

import adcheck.refengine as E
from adcheck.gradcheck.api import check, run
from adcheck.gradcheck.core.options import Options
from adcheck.gradcheck.explore.search import Explorer

#: the sweep's explored points (``adcheck ops tan tanh --dtype complex128 --check gradgrad``)
TAN_TAIL = complex(-29.434843959770156, 26.804536062485703)
TANH_TAIL = complex(-258.1451482917138, 966.1061444859199)


def verdict_at(func, inputs, **keywords) -> str:
    """What exploring says at exactly these inputs (pass, fail, rounding, ...)."""
    report = SimpleNamespace(seed=0, name="f", results=[])   # what the search reads of it
    explorer = Explorer(run, func, inputs, Options.from_keywords(
        seed=0, precise=True, explore=True, explore_budget=60.0, **keywords), report,
        False, False)
    return explorer.try_point({})[0]


def _z(value):
    return E.tensor(value, dtype=E.complex128, requires_grad=True)


@pytest.mark.parametrize("name, z, sign", [("tan", TAN_TAIL, 1), ("tanh", TANH_TAIL, -1)])
def test_the_ad_values_there_are_the_rounding_of_y(name, z, sign):
    """The formula is exact at the rounded y: the AD values are 2 y (1 +- y*y)
    at fl(y), off the true second derivative by up to 100 %, and one ulp of y
    moves them by 1e7 (tan) and 1e208 (tanh) times that error."""
    mpmath.mp.dps = 600
    x = _z(z)
    y = getattr(E, name)(x)
    (first,) = E.autograd.grad(y, x, E.ones_like(y), create_graph=True)
    (second,) = E.autograd.grad(first, x, E.ones_like(first))
    exact_y = getattr(mpmath, name)(mpmath.mpc(z.real, z.imag))
    exact_first = (1 / mpmath.cos(mpmath.mpc(z.real, z.imag)) ** 2 if name == "tan"
                   else 1 / mpmath.cosh(mpmath.mpc(z.real, z.imag)) ** 2)
    exact_second = 2 * sign * exact_y * exact_first
    rounded = y.item()
    at = mpmath.mpc(rounded.real, rounded.imag)
    formula = 2 * sign * at * (1 + sign * at * at)
    # (autograd's vjp conjugates: the AD second derivative is conj(f'') for a gradient of 1)
    assert abs(complex(formula).conjugate() - second.item()) <= 1e-15 * abs(second.item())
    error = abs(complex(exact_second) - complex(formula))
    assert error > 0.3 * abs(complex(exact_second))           # far off the true value ...
    ulp = mpmath.mpc(0, 2.0 ** -53) if name == "tan" else mpmath.mpf(2.0 ** -53)
    moved = 2 * sign * (at + ulp) * (1 + sign * (at + ulp) ** 2)
    assert abs(complex(moved - formula)) > 1e7 * error        # ... and far inside its rounding


@pytest.mark.parametrize("name, z", [("tan", TAN_TAIL), ("tanh", TANH_TAIL)])
def test_the_tails_are_not_failed_by_exploring(name, z):
    func = getattr(E, name)
    assert verdict_at(func, (_z(z),), order=1) == "pass"
    assert verdict_at(func, (_z(z),), order=2) == "rounding"


@pytest.mark.parametrize("name, z", [("tan", TAN_TAIL), ("tanh", TANH_TAIL)])
def test_torchs_own_tails_alike(name, z):
    """torch's formulas are the same (``adcheck ops tan tanh --engine torch`` failed them)."""
    torch = pytest.importorskip("torch", reason="torch's tan and tanh")
    func, x = getattr(torch, name), torch.tensor(z, dtype=torch.complex128, requires_grad=True)
    assert verdict_at(func, (x,), order=2) == "rounding"


@pytest.mark.parametrize("name, z", [("tan", TAN_TAIL), ("tanh", TANH_TAIL)])
def test_the_quick_pass_reaches_them_and_says_why(name, z):
    """Given the tail's direction at modulus 1, the quick pass's |x| = 40 (tan)
    or 1000 (tanh) is the tail: a pass, counted apart in its message."""
    report = check(getattr(E, name), (_z(z / abs(z)),), order=2, precise=True,
                   explore="quick", seed=0)
    assert report.passed, report.message()
    tally = report.counts["explore"]
    assert tally["below_rounding"] >= 1 and not tally["findings"], tally
    explored = next(r for r in report.results if r.check == "explore")
    assert "1 where the first derivative is below the forward's rounding" in explored.detail


class MaskedPow(E.autograd.Function):
    """x**p with refengine's old (and torch's) base gradient: the whole product
    masked where p == 0, so its derivative in p, 1 / x there, is lost."""

    @staticmethod
    def forward(ctx, x, p):
        ctx.save_for_backward(x, p)
        return x.pow(p)

    @staticmethod
    def backward(ctx, grad):
        x, p = ctx.saved_tensors
        dx = (grad * (p * x.pow(p - 1)).conj()).masked_fill(p == 0, 0)
        return dx, grad * (x.pow(p) * x.log()).conj()


class Cube(E.autograd.Function):
    """x**3 / 3 whose backward's where has a NaN gradient in its other branch at 0."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3 / 3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * E.where(x == 0, E.zeros_like(x), x ** 3 / x)


def _pow_inputs(dtype):
    rng = np.random.default_rng(3)
    x, p = rng.uniform(0.5, 2.0, (2, 3)), rng.standard_normal((2, 3))
    p[0, 0] = 0.0
    if dtype is E.complex128:
        x, p = x + 0.3j, p + 0.2j * (p != 0)
    return (E.tensor(x, dtype=dtype, requires_grad=True),
            E.tensor(p, dtype=dtype, requires_grad=True))


@pytest.mark.parametrize("dtype", [E.float64, E.complex128])
def test_the_old_pow_at_an_exponent_of_zero_still_fails(dtype, monkeypatch):
    """Its first derivative's row there is exactly 0, within the forward's rounding:
    the forward's second differences judge it, and resolve the 1 / x it drops."""
    from adcheck.gradcheck.explore import forwardwitness
    seen, extrapolated = [], forwardwitness.Witness._extrapolated

    def spy(self, *args):
        found = extrapolated(self, *args)
        seen.append(found)
        return found
    monkeypatch.setattr(forwardwitness.Witness, "_extrapolated", spy)
    assert verdict_at(MaskedPow.apply, _pow_inputs(dtype), order=2) == "fail"
    assert any(f is not None and abs(f[0]) > 1e3 * f[1] for f in seen), seen
    assert verdict_at(E.pow, _pow_inputs(dtype), order=2) == "pass"   # the fixed formula


def test_torchs_pow_at_an_exponent_of_zero_still_fails():
    torch = pytest.importorskip("torch", reason="torch's pow as the counter-example")
    x, p = (torch.tensor(a.detach().numpy(), requires_grad=True) for a in _pow_inputs(E.complex128))
    assert verdict_at(torch.pow, (x, p), order=2) == "fail"


def test_a_nan_double_backward_at_zero_still_fails():
    x = E.tensor([0.0, 1.3, -0.7], dtype=E.float64, requires_grad=True)
    assert verdict_at(Cube.apply, (x,), order=2) == "fail"
