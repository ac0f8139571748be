"""Forward AD in the high-level API, mixed with reverse mode, and in Functions.

``functional.jacobian(strategy="forward-mode")``, ``functional.jvp``,
``functional.hvp`` and ``hessian`` against closed forms; forward-over-reverse
and reverse-over-forward (forward AD is backward differentiable: a tangent
computed in grad mode has a ``grad_fn``); a custom ``Function.jvp`` with
``save_for_forward``, and the error for a Function without one.
"""
from __future__ import annotations

import numpy as np
import pytest

from adcheck.conformance.case import FORWARD_AD, case
from adcheck.conformance.compare import assert_close

CITE_HIGH_LEVEL = ("Use the new engine to compute quantities such as `jvp`, `hvp` and "
                   "`hessian` within the high level API.")
CITE_BACKWARD = ("This API is completely backward differentiable and so backward mode "
                 "AD can be used anywhere with this API.")
CITE_FUNCTION = "Update custom Function API to allows overwriting forward AD"

X = np.array([0.2, -0.7, 1.1])
V = np.array([1.0, -2.0, 0.5])


def _vec(E, values, requires_grad=False):
    return E.tensor(values, dtype=E.float64, requires_grad=requires_grad)


def _scalar_f(E, x):
    """f(x) = g(x) * sum(x) with g(x) = sum(sin(x) exp(x))."""
    return (E.sin(x) * E.exp(x)).sum() * x.sum()


def _scalar_f_grad():
    g, s = (np.sin(X) * np.exp(X)).sum(), X.sum()
    dg = (np.cos(X) + np.sin(X)) * np.exp(X)
    return dg * s + g


def _scalar_f_hessian():
    s = X.sum()
    dg = (np.cos(X) + np.sin(X)) * np.exp(X)
    return np.diag(2 * np.cos(X) * np.exp(X) * s) + dg[:, None] + dg[None, :]


M = np.array([[0.0, 1.0, -0.5], [2.0, 0.0, 0.3], [-1.0, 0.4, 0.0]])


def _vector_f(E, x):
    """f(x) = sin(x) * (M x), which couples the coordinates."""
    return E.sin(x) * (E.tensor(M, dtype=E.float64) @ x)


def _vector_f_jacobian():
    return np.diag(np.cos(X) * (M @ X)) + np.sin(X)[:, None] * M


@case(CITE_HIGH_LEVEL, source=FORWARD_AD)
def jacobian_forward_mode_matches_reverse_mode(E):
    jac = E.autograd.functional.jacobian
    x = _vec(E, X)
    forward = jac(lambda t: _vector_f(E, t), x, strategy="forward-mode", vectorize=True)
    reverse = jac(lambda t: _vector_f(E, t), x)
    assert_close(forward, _vector_f_jacobian(), rtol=1e-12, atol=1e-15)
    assert_close(forward, reverse, rtol=1e-12, atol=1e-15)


@case(CITE_HIGH_LEVEL, source=FORWARD_AD)
def jacobian_forward_mode_with_several_inputs_and_outputs(E):
    a, b = _vec(E, [1.0, 2.0]), _vec(E, [3.0, 4.0])
    fn = lambda a, b: (a * b, a.sum() * b)  # noqa: E731
    forward = E.autograd.functional.jacobian(fn, (a, b), strategy="forward-mode", vectorize=True)
    expected = (([[3.0, 0.0], [0.0, 4.0]], [[1.0, 0.0], [0.0, 2.0]]),
                ([[3.0, 3.0], [4.0, 4.0]], [[3.0, 0.0], [0.0, 3.0]]))
    for out_idx in range(2):
        for in_idx in range(2):
            assert_close(forward[out_idx][in_idx], expected[out_idx][in_idx], rtol=1e-12)


@case("The simple definition for forward AD is that it is computing a Jacobian "
      "vector product.", source=FORWARD_AD)
def functional_jvp_gives_value_and_jacobian_vector_product(E):
    fwd = E.autograd.forward_ad
    value, jvp = E.autograd.functional.jvp(lambda t: _vector_f(E, t), _vec(E, X), _vec(E, V))
    assert_close(value, np.sin(X) * (M @ X), rtol=1e-12)
    assert_close(jvp, _vector_f_jacobian() @ V, rtol=1e-12)
    with fwd.dual_level():
        dual_jvp = fwd.unpack_dual(_vector_f(E, fwd.make_dual(_vec(E, X), _vec(E, V)))).tangent
    assert_close(dual_jvp, jvp, rtol=1e-12)


@case(CITE_BACKWARD, source=FORWARD_AD)
def tangent_computed_in_grad_mode_has_a_grad_fn(E):
    fwd = E.autograd.forward_ad
    x = _vec(E, X, requires_grad=True)
    with fwd.dual_level():
        tangent = fwd.unpack_dual(_scalar_f(E, fwd.make_dual(x, _vec(E, V)))).tangent
        assert tangent.grad_fn is not None and tangent.requires_grad
        with E.no_grad():
            quiet = fwd.unpack_dual(_scalar_f(E, fwd.make_dual(x, _vec(E, V)))).tangent
        assert quiet.grad_fn is None and not quiet.requires_grad
        assert_close(quiet, tangent, rtol=1e-12)


@case(CITE_BACKWARD, source=FORWARD_AD)
def hvp_by_forward_over_reverse(E):
    """Differentiate the gradient in direction v: make_dual, then grad."""
    fwd = E.autograd.forward_ad
    x = _vec(E, X, requires_grad=True)
    with fwd.dual_level():
        y = _scalar_f(E, fwd.make_dual(x, _vec(E, V)))
        grad, = E.autograd.grad(y, x, create_graph=True)
        primal, hvp = fwd.unpack_dual(grad)
        assert hvp is not None, "the backward pass dropped the tangent"
        assert_close(primal, _scalar_f_grad(), rtol=1e-12)
        assert_close(hvp, _scalar_f_hessian() @ V, rtol=1e-12)
    _, reference = E.autograd.functional.hvp(lambda t: _scalar_f(E, t), _vec(E, X), _vec(E, V))
    assert_close(hvp, reference, rtol=1e-12)


@case(CITE_BACKWARD, source=FORWARD_AD)
def hvp_by_reverse_over_forward(E):
    """Backpropagate through a tangent: d/dx (J(x) v) = H v, d/dv (J v) = J."""
    fwd = E.autograd.forward_ad
    x, v = _vec(E, X, requires_grad=True), _vec(E, V, requires_grad=True)
    with fwd.dual_level():
        jvp = fwd.unpack_dual(_scalar_f(E, fwd.make_dual(x, v))).tangent
    hvp, grad = E.autograd.grad(jvp, (x, v))
    assert_close(hvp, _scalar_f_hessian() @ V, rtol=1e-12)
    assert_close(grad, _scalar_f_grad(), rtol=1e-12)


@case(CITE_HIGH_LEVEL, source=FORWARD_AD)
def functional_hvp_and_forward_over_reverse_hessian(E):
    fn = lambda t: _scalar_f(E, t)  # noqa: E731
    value, hvp = E.autograd.functional.hvp(fn, _vec(E, X), _vec(E, V))
    assert_close(value, (np.sin(X) * np.exp(X)).sum() * X.sum(), rtol=1e-12)
    assert_close(hvp, _scalar_f_hessian() @ V, rtol=1e-12)
    hessian = E.autograd.functional.hessian(fn, _vec(E, X), vectorize=True,
                                            outer_jacobian_strategy="forward-mode")
    assert_close(hessian, _scalar_f_hessian(), rtol=1e-12)


def _scaled_product(E):
    class ScaledProduct(E.autograd.Function):
        """k * x * y, with both derivatives written by hand."""

        @staticmethod
        def forward(ctx, x, y, k):
            ctx.save_for_forward(x, y)
            ctx.save_for_backward(x, y)
            ctx.k = k
            return x * y * k

        @staticmethod
        def jvp(ctx, x_t, y_t, k_t):
            assert k_t is None, "a non-tensor input has no tangent"
            x, y = ctx.saved_tensors
            return ctx.k * (x_t * y + x * y_t)

        @staticmethod
        def backward(ctx, grad):
            x, y = ctx.saved_tensors
            return grad * ctx.k * y, grad * ctx.k * x, None

    return ScaledProduct


@case(CITE_FUNCTION, source=FORWARD_AD)
def custom_function_jvp_with_save_for_forward(E):
    fwd = E.autograd.forward_ad
    fn = _scaled_product(E)
    x, y = _vec(E, [1.0, 2.0]), _vec(E, [3.0, 4.0])
    with fwd.dual_level():
        x_dual = fwd.make_dual(x, _vec(E, [1.0, -1.0]))
        out = fn.apply(x_dual, fwd.make_dual(y, _vec(E, [0.5, 2.0])), 2.0)
        primal, tangent = fwd.unpack_dual(out)
        assert_close(primal, [6.0, 16.0])
        assert_close(tangent, [2.0 * (3.0 + 0.5), 2.0 * (-4.0 + 4.0)])
        # An input without a tangent is seen by jvp as a zero tangent.
        tangent = fwd.unpack_dual(fn.apply(fwd.make_dual(x, _vec(E, [1.0, 1.0])), y, 3.0)).tangent
        assert_close(tangent, [9.0, 12.0])


@case(CITE_FUNCTION, source=FORWARD_AD)
def custom_function_jvp_setup_context_style(E):
    class Exp(E.autograd.Function):
        @staticmethod
        def forward(x):
            return E.exp(x)

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_forward(output)

        @staticmethod
        def jvp(ctx, x_t):
            result, = ctx.saved_tensors
            return result * x_t

        @staticmethod
        def backward(ctx, grad):
            raise AssertionError("forward mode must not call backward")

    fwd = E.autograd.forward_ad
    with fwd.dual_level():
        out = Exp.apply(fwd.make_dual(_vec(E, X), _vec(E, V)))
        assert_close(fwd.unpack_dual(out).tangent, np.exp(X) * V, rtol=1e-12)


@case(CITE_FUNCTION, source=FORWARD_AD)
def custom_function_forward_over_reverse(E):
    """A Function's backward written with engine ops differentiates forward."""
    fwd = E.autograd.forward_ad
    fn = _scaled_product(E)
    x, y = _vec(E, [1.0, 2.0], requires_grad=True), _vec(E, [3.0, 4.0])
    with fwd.dual_level():
        out = fn.apply(x, fwd.make_dual(y, _vec(E, [1.0, 1.0])), 2.0)
        grad, = E.autograd.grad(out.sum(), x, create_graph=True)
        assert_close(fwd.unpack_dual(grad).primal, [6.0, 8.0])
        assert_close(fwd.unpack_dual(grad).tangent, [2.0, 2.0])


@case("Once we have most formulas implemented, make gradcheck properly fail when "
      "it is not able to verify a forward gradient", source=FORWARD_AD)
def function_without_jvp_raises_instead_of_a_zero_tangent(E):
    class Double(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    fwd = E.autograd.forward_ad
    with fwd.dual_level():
        with pytest.raises(NotImplementedError, match="jvp"):
            Double.apply(fwd.make_dual(_vec(E, X), _vec(E, V)))
        plain = Double.apply(_vec(E, X))        # no dual input: no jvp needed
        assert fwd.unpack_dual(plain).tangent is None
