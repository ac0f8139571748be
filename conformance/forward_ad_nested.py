"""Nested dual levels: independent tangents per level, higher-order derivatives.

The design note asks for nested levels; PyTorch refuses them, so these cases
run on refengine only, and their expectations come from mathematics (closed
forms, and central finite differences computed in NumPy), not from an
engine. The convention: the level entered first is the outer one; a
``make_dual`` at the inner level of a tensor that is dual at the outer level
keeps its outer tangent, so a jvp taken inside another jvp differentiates
it: ``d/de [J(x + e u) w] = f''(x)[u, w]``.
"""
from __future__ import annotations

import numpy as np
import pytest

from adcheck.conformance.case import FORWARD_AD, case
from adcheck.conformance.compare import assert_close

NESTED = ("This API supports nesting levels and providing a specific level kwarg "
          "for each function to enable higher order gradients easily.")
TORCH_REFUSES = {"torch": "torch 2.13 raises 'Nested forward mode AD is not "
                          "supported at the moment' on entering a second level"}

X = np.array([0.3, -1.2, 0.7])
U = np.array([1.0, 0.5, -2.0])
W = np.array([-0.4, 2.0, 1.5])
A = np.array([[0.5, -1.0, 0.2], [0.3, 0.8, -0.6], [-0.7, 0.1, 0.9]])


def _vec(E, values):
    return E.tensor(values, dtype=E.float64)


def _tanh_layer(E, x):
    return E.tanh(_vec(E, A) @ x)


def _tanh_layer_second(u, w):
    """Closed form of d^2 tanh(A x)[u, w]."""
    y = np.tanh(A @ X)
    return -2.0 * y * (1.0 - y ** 2) * (A @ u) * (A @ w)


def _jvp_of_jvp(E, f, x, u, w):
    """(f(x), f'(x)u, f'(x)w, f''(x)[u, w]) from two nested levels."""
    fwd = E.autograd.forward_ad
    with fwd.dual_level() as outer:
        xo = fwd.make_dual(_vec(E, x), _vec(E, u), level=outer)
        with fwd.dual_level() as inner:
            xi = fwd.make_dual(xo, _vec(E, w), level=inner)
            y = f(E, xi)
            value, inner_t = fwd.unpack_dual(y, level=inner)
            outer_t = fwd.unpack_dual(y, level=outer).tangent
            second = fwd.unpack_dual(inner_t, level=outer).tangent
            value = fwd.unpack_dual(value, level=outer).primal
            return value, outer_t, inner_t, second


@case(NESTED, source=FORWARD_AD, not_on=TORCH_REFUSES)
def nested_levels_keep_independent_tangents(E):
    fwd = E.autograd.forward_ad
    with fwd.dual_level() as outer:
        xo = fwd.make_dual(_vec(E, X), _vec(E, U), level=outer)
        with fwd.dual_level() as inner:
            assert inner != outer
            xi = fwd.make_dual(xo, _vec(E, W), level=inner)
            only_inner = fwd.make_dual(_vec(E, X), _vec(E, W))   # default: innermost
            assert_close(fwd.unpack_dual(xi, level=outer).tangent, U)
            assert_close(fwd.unpack_dual(xi, level=inner).tangent, W)
            assert_close(fwd.unpack_dual(xi).tangent, W)
            assert_close(fwd.unpack_dual(only_inner, level=inner).tangent, W)
            assert fwd.unpack_dual(only_inner, level=outer).tangent is None
            assert fwd.unpack_dual(xo, level=inner).tangent is None
            y = xi * 3
            assert_close(fwd.unpack_dual(y, level=outer).tangent, 3 * U)
            assert_close(fwd.unpack_dual(y, level=inner).tangent, 3 * W)


@case("When exiting a level, all dual Tensors from this level become regular "
      "Tensors again.", source=FORWARD_AD, not_on=TORCH_REFUSES)
def leaving_the_inner_level_clears_only_its_tangents(E):
    fwd = E.autograd.forward_ad
    with fwd.dual_level() as outer:
        xo = fwd.make_dual(_vec(E, X), _vec(E, U), level=outer)
        with fwd.dual_level():
            xi = fwd.make_dual(xo, _vec(E, W))
            y = xi * 2
            only_inner = fwd.make_dual(_vec(E, X), _vec(E, W))
        assert_close(fwd.unpack_dual(xi).tangent, U)       # default is outer again
        assert_close(fwd.unpack_dual(y, level=outer).tangent, 2 * U)
        assert fwd.unpack_dual(only_inner).tangent is None
    for t in (xo, xi, y, only_inner):
        assert fwd.unpack_dual(t).tangent is None


@case(NESTED, source=FORWARD_AD, not_on=TORCH_REFUSES)
def jvp_of_jvp_is_the_second_directional_derivative(E):
    value, outer_t, inner_t, second = _jvp_of_jvp(E, _tanh_layer, X, U, W)
    y = np.tanh(A @ X)
    assert_close(value, y, rtol=1e-12)
    assert_close(outer_t, (1 - y ** 2) * (A @ U), rtol=1e-12)
    assert_close(inner_t, (1 - y ** 2) * (A @ W), rtol=1e-12)
    assert second is not None, "the inner tangent lost its outer tangent"
    assert_close(second, _tanh_layer_second(U, W), rtol=1e-12)
    swapped = _jvp_of_jvp(E, _tanh_layer, X, W, U)[3]
    assert_close(swapped, second, rtol=1e-12)          # the Hessian is symmetric


def _coupled(E, x):
    """A scalar mixing all coordinates: sum(sin(x) * exp(A x)) + (x0 x1 x2)^2."""
    return (E.sin(x) * E.exp(_vec(E, A) @ x)).sum() + (x[0] * x[1] * x[2]) ** 2


def _coupled_np(x):
    return (np.sin(x) * np.exp(A @ x)).sum() + (x[0] * x[1] * x[2]) ** 2


@case(NESTED, source=FORWARD_AD, not_on=TORCH_REFUSES)
def jvp_of_jvp_matches_finite_differences(E):
    second = _jvp_of_jvp(E, _coupled, X, U, W)[3]
    h, f = 1e-4, _coupled_np
    fd = (f(X + h * U + h * W) - f(X + h * U - h * W)
          - f(X - h * U + h * W) + f(X - h * U - h * W)) / (4 * h * h)
    assert_close(second, fd, rtol=1e-6, atol=1e-6)


@case(NESTED, source=FORWARD_AD, not_on=TORCH_REFUSES)
def three_levels_give_the_third_directional_derivative(E):
    fwd = E.autograd.forward_ad
    v = np.array([2.0, -1.0, 0.5])
    with fwd.dual_level() as l1:
        x = fwd.make_dual(_vec(E, X), _vec(E, U), level=l1)
        with fwd.dual_level() as l2:
            x = fwd.make_dual(x, _vec(E, v), level=l2)
            with fwd.dual_level() as l3:
                x = fwd.make_dual(x, _vec(E, W), level=l3)
                t3 = fwd.unpack_dual(E.sin(x), level=l3).tangent
                t32 = fwd.unpack_dual(t3, level=l2).tangent
                t321 = fwd.unpack_dual(t32, level=l1).tangent
                assert_close(t3, np.cos(X) * W, rtol=1e-12)
                assert_close(t32, -np.sin(X) * v * W, rtol=1e-12)
                assert_close(t321, -np.cos(X) * U * v * W, rtol=1e-12)


@case(NESTED, source=FORWARD_AD, not_on=TORCH_REFUSES)
def jvp_of_jvp_differentiates_in_the_tangent_too(E):
    """An inner tangent that is itself dual at the outer level: the outer
    tangent of f'(x)w is f''(x)[u, w] + f'(x)w', the full derivative."""
    fwd = E.autograd.forward_ad
    w_dot = np.array([0.3, 0.3, -1.0])
    with fwd.dual_level() as outer:
        xo = fwd.make_dual(_vec(E, X), _vec(E, U), level=outer)
        wo = fwd.make_dual(_vec(E, W), _vec(E, w_dot), level=outer)
        with fwd.dual_level() as inner:
            y = _tanh_layer(E, fwd.make_dual(xo, wo, level=inner))
            inner_t = fwd.unpack_dual(y, level=inner).tangent
            got = fwd.unpack_dual(inner_t, level=outer).tangent
    d1 = 1 - np.tanh(A @ X) ** 2
    assert_close(got, _tanh_layer_second(U, W) + d1 * (A @ w_dot), rtol=1e-12)


@case(NESTED, source=FORWARD_AD, not_on=TORCH_REFUSES)
def inner_primal_keeps_its_outer_tangent(E):
    fwd = E.autograd.forward_ad
    with fwd.dual_level() as outer:
        xo = fwd.make_dual(_vec(E, X), _vec(E, U), level=outer)
        with fwd.dual_level() as inner:
            y = E.exp(fwd.make_dual(xo, _vec(E, W), level=inner))
            primal = fwd.unpack_dual(y, level=inner).primal
            assert fwd.unpack_dual(primal, level=inner).tangent is None
            assert_close(fwd.unpack_dual(primal, level=outer).tangent, np.exp(X) * U, rtol=1e-12)


@case(NESTED, source=FORWARD_AD, not_on=TORCH_REFUSES)
def inplace_write_of_a_nested_dual_sets_both_levels(E):
    """``out[1] = dual`` on a plain tensor, with a value dual at two levels."""
    fwd = E.autograd.forward_ad
    with fwd.dual_level() as outer:
        xo = fwd.make_dual(_vec(E, X), _vec(E, U), level=outer)
        with fwd.dual_level() as inner:
            xi = fwd.make_dual(xo, _vec(E, W), level=inner)
            out = E.zeros(3, dtype=E.float64)
            out[1] = xi[2]
            assert_close(fwd.unpack_dual(out, level=outer).tangent, [0.0, U[2], 0.0])
            assert_close(fwd.unpack_dual(out, level=inner).tangent, [0.0, W[2], 0.0])
        assert_close(fwd.unpack_dual(out).tangent, [0.0, U[2], 0.0])


@case("Finally, to ensure the strict scoping presented above, we introduce a "
      "global state tracking the different levels and which Tensor belongs to "
      "which level to ensure that we can clear them properly on exit.",
      source=FORWARD_AD, not_on=TORCH_REFUSES)
def only_the_innermost_level_can_be_exited(E):
    fwd = E.autograd.forward_ad
    outer = fwd.enter_dual_level()
    try:
        inner = fwd.enter_dual_level()
        assert inner > outer
        with pytest.raises(RuntimeError):
            fwd.exit_dual_level(level=outer)
        fwd.exit_dual_level(level=inner)
    finally:
        fwd.exit_dual_level(level=outer)
