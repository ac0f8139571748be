"""pow's second derivative at an exponent of exactly 0.

d/dx x**p = p x**(p-1) is 0 at p = 0, but its derivative in p is x**-1.
refengine (as torch's where(exponent == 0, 0, ...)) masked the whole
product at p == 0, so the double backward was 0 there: found when the
explorer's second order first judged explored points (an exponent moved to
exactly 0). The mask now covers only products that are not finite there
(x = 0, a NaN gradient), where torch's value, 0, is kept.
"""
from __future__ import annotations

import numpy as np
import pytest

import adcheck.refengine as E
from adcheck.gradcheck import check


def _pair(dtype):
    rng = np.random.default_rng(3)
    x = rng.uniform(0.5, 2.0, (2, 3))
    p = rng.standard_normal((2, 3))
    p[0, 0] = p[1, 2] = 0.0
    if dtype is E.complex128:
        x, p = x + 0.3j, p.astype(complex)
    return (E.tensor(x, dtype=dtype, requires_grad=True),
            E.tensor(p, dtype=dtype, requires_grad=True))


@pytest.mark.parametrize("dtype", [E.float64, E.complex128])
def test_second_order_at_an_exponent_of_zero(dtype):
    report = check(E.pow, _pair(dtype), order=2, precise=True, explore=False)
    assert report.passed, report.message()


def test_first_order_values_are_torchs():
    x = E.tensor(np.array([0.0, 2.0, 0.0]), dtype=E.float64, requires_grad=True)
    p = E.tensor(np.array([0.0, 0.0, 1.5]), dtype=E.float64)
    (g,) = E.autograd.grad(E.pow(x, p), x, E.tensor(np.array([np.nan, 1.0, 1.0])))
    assert g.numpy().tolist() == [0.0, 0.0, 0.0]   # (0 at p == 0 even for a NaN gradient)


def test_torchs_own_pow_fails_there():
    torch = pytest.importorskip("torch", reason="torch's pow as the counter-example")
    x = torch.tensor([1.5, 0.7], dtype=torch.float64, requires_grad=True)
    p = torch.tensor([0.0, 0.4], dtype=torch.float64, requires_grad=True)
    assert not torch.autograd.gradgradcheck(torch.pow, (x, p), raise_exception=False)
