"""The Jacobian builders against independent oracles: Jacobians derived by
hand, and mpmath. Each builder runs on each engine (the ``E`` fixture)."""
from __future__ import annotations

import mpmath
import numpy as np
import pytest

from adcheck.gradcheck import (
    Jacobian,
    forward_jacobian,
    numerical_jacobian,
    reference_jacobian,
    reverse_jacobian,
)
from adcheck.gradcheck.core.problem import Problem
from adcheck.gradcheck.numerics.reference import mp_column

BUILDERS = [numerical_jacobian, reverse_jacobian, forward_jacobian]
X = np.array([0.3, -1.2, 0.8])
Y = np.array([1.5, 0.2, -0.7, 0.4])


def leaf(E, values):
    return E.from_numpy(np.array(values)).requires_grad_()


def two_outputs_jacobian() -> dict:
    """By hand: f0 = x * sum(y), f1 = sin(x) . y[:3]."""
    return {(0, 0): np.diag(np.full(3, Y.sum())), (0, 1): np.outer(X, np.ones(4)),
            (1, 0): (np.cos(X) * Y[:3])[None, :],
            (1, 1): np.concatenate([np.sin(X), [0.0]])[None, :]}


@pytest.mark.parametrize("builder", BUILDERS, ids=lambda b: b.__name__)
def test_real_blocks_match_the_jacobian_derived_by_hand(E, builder):
    def two_outputs(x, y):
        return x * y.sum(), E.sin(x) @ y[:3]
    jac = builder(two_outputs, (leaf(E, X), leaf(E, Y)))
    for key, expected in two_outputs_jacobian().items():
        np.testing.assert_allclose(jac[key], expected, rtol=1e-7, atol=1e-9, err_msg=str(key))


@pytest.mark.parametrize("builder", BUILDERS, ids=lambda b: b.__name__)
def test_holomorphic_block_is_the_rotation_of_the_derivative(E, builder):
    # f(z) = z**2: each element's real block is [[a, -b], [b, a]] with f' = a + ib = 2z
    z = leaf(E, [0.5 + 0.25j, -1.0 + 2.0j])
    block = builder(lambda z: z * z, (z,))[0, 0]
    for k, value in enumerate([1.0 + 0.5j, -2.0 + 4.0j]):
        a, b = value.real, value.imag
        np.testing.assert_allclose(block[2 * k:2 * k + 2, 2 * k:2 * k + 2],
                                   [[a, -b], [b, a]], atol=1e-8)
    assert block[0:2, 2:4].tolist() == [[0.0, 0.0], [0.0, 0.0]]


@pytest.mark.parametrize("builder", BUILDERS, ids=lambda b: b.__name__)
def test_complex_to_real_row_and_pytorch_form(E, builder):
    # |z|: d/dx = x/|z|, d/dy = y/|z|; PyTorch's form combines them as x/|z| + 1j y/|z|
    jac = builder(E.abs, (leaf(E, [3.0 + 4.0j]),))
    np.testing.assert_allclose(jac[0, 0], [[0.6, 0.8]], atol=1e-8)
    np.testing.assert_allclose(jac.complex_form(0, 0), [[0.6 + 0.8j]], atol=1e-8)


def test_modes_are_labels(E):
    x = leaf(E, [0.3])
    assert [b(E.sin, (x,)).mode for b in BUILDERS] == ["numerical", "reverse", "forward"]
    with pytest.raises(ValueError, match="unknown Jacobian mode"):
        Jacobian("backward", None)


def mp_sin(x):
    return np.vectorize(mpmath.sin, otypes=[object])(x)


def test_reference_jacobian_of_mpmath_sin_is_cos(E):
    x = leaf(E, [0.3, 2.5])
    jac = reference_jacobian(mp_sin, (x,))
    assert jac.mode == "reference"
    exact = [float(mpmath.cos(mpmath.mpf(v))) for v in x.detach().numpy()]
    np.testing.assert_allclose(np.diag(jac[0, 0]), exact, rtol=2 ** -52, atol=0)


def test_reference_columns_have_30_significant_digits(E):
    z = leaf(E, [0.7 - 1.1j])
    ref = lambda z: np.vectorize(mpmath.exp, otypes=[object])(z) * z  # d/dz = e^z (1 + z)
    problem = Problem(E.exp, (z,))  # same output layout as the reference
    with mpmath.workdps(50):
        zz = mpmath.mpc(0.7, -1.1)
        d = mpmath.exp(zz) * (1 + zz)
        for coordinate, direction in ((0, 1), (1, 1j)):
            column = mp_column(problem, ref, 0, coordinate)[0]
            expected = d * direction
            got = mpmath.mpc(column[0], column[1])
            assert abs(got - expected) <= mpmath.mpf(10) ** -30 * abs(expected)


def test_reference_convention_receives_object_arrays_and_constants(E):
    seen = {}

    def ref(x, power):
        seen["types"] = {type(v) for v in x.ravel()}
        seen["power"] = power
        return np.vectorize(lambda v: v ** power, otypes=[object])(x)

    x = leaf(E, [[1.5, 2.0]])
    jac = reference_jacobian(ref, (x, 3), func=lambda x, p: x ** p)
    assert seen == {"types": {mpmath.mpf}, "power": 3}
    np.testing.assert_allclose(np.diag(jac[0, 0]), [3 * 1.5 ** 2, 3 * 2.0 ** 2], rtol=1e-15)
