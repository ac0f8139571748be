"""autograd.functional: jacobian (both strategies), hessian, vjp, jvp, hvp, vhp."""
from __future__ import annotations

import pytest

from adcheck.conformance.case import AUTOGRAD_NOTE, MECHANICS, case
from adcheck.conformance.compare import assert_close

_F64 = dict(rtol=1e-10, atol=1e-12)


def _x(E):
    return E.tensor([0.5, -1.0, 2.0], dtype=E.float64)


def _cube_sum(x):
    return (x ** 3).sum()


@case("The Jacobian matrix associated with this function is that matrix J_f of size "
      "(O, I)", source=AUTOGRAD_NOTE)
def jacobian_reverse_mode(E):
    x = _x(E)
    a = E.tensor([[1.0, 2.0, 3.0], [0.0, -1.0, 4.0]], dtype=E.float64)
    jac = E.autograd.functional.jacobian(lambda t: a @ E.sin(t), x)
    assert tuple(jac.shape) == (2, 3)
    assert_close(jac, a * E.cos(x), **_F64)
    assert not jac.requires_grad


@case("Note the particularly interesting case where f's output is a scalar value because "
      "providing a vector v containing the value 1 will compute exactly J_f.",
      source=AUTOGRAD_NOTE)
def jacobian_strategies_agree(E):
    x = _x(E)
    f = lambda t: E.exp(t) * t.sum()  # noqa: E731
    reverse = E.autograd.functional.jacobian(f, x)
    vectorized = E.autograd.functional.jacobian(f, x, vectorize=True)
    forward = E.autograd.functional.jacobian(f, x, vectorize=True, strategy="forward-mode")
    for jac in (vectorized, forward):
        assert_close(jac, reverse, **_F64)
    rows = [[(E.exp(x[i]) * ((i == j) * x.sum() + 1)).item() for j in range(3)]
            for i in range(3)]
    assert_close(reverse, E.tensor(rows, dtype=E.float64), **_F64)
    with pytest.raises(NotImplementedError, match="vectorize=True"):
        E.autograd.functional.jacobian(f, x, strategy="forward-mode")


@case("The Jacobian matrix associated with this function is that matrix J_f of size "
      "(O, I)", source=AUTOGRAD_NOTE)
def jacobian_of_several_inputs_and_outputs(E):
    a, b = _x(E), E.tensor([3.0, 4.0], dtype=E.float64)
    jac = E.autograd.functional.jacobian(lambda u, v: (u * 2, v.sum() * u), (a, b))
    (ja_u, ja_v), (jb_u, jb_v) = jac
    assert_close(ja_u, 2 * E.eye(3, dtype=E.float64), **_F64)
    assert_close(ja_v, E.zeros(3, 2, dtype=E.float64), **_F64)
    assert_close(jb_u, 7 * E.eye(3, dtype=E.float64), **_F64)
    assert_close(jb_v, E.stack([a, a], dim=1), **_F64)


@case("Currently, PyTorch only implements reverse mode automatic differentiation which, "
      "given an arbitrary vector v of size O, will compute v^T J_f.",
      source=AUTOGRAD_NOTE)
def vjp_and_jvp(E):
    x = _x(E)
    v = E.tensor([1.0, 2.0, 3.0], dtype=E.float64)
    out, vjp = E.autograd.functional.vjp(E.sin, x, v)
    assert_close(out, E.sin(x), **_F64)
    assert_close(vjp, v * E.cos(x), **_F64)
    out, jvp = E.autograd.functional.jvp(E.sin, x, v)
    assert_close(jvp, v * E.cos(x), **_F64)
    _, vjp_scalar = E.autograd.functional.vjp(_cube_sum, x)
    assert_close(vjp_scalar, 3 * x * x, **_F64)


@case("The gradient of the original function is the computed by using the chain rule on "
      "each of these elementary operations.", source=AUTOGRAD_NOTE)
def hessian_hvp_vhp(E):
    x = _x(E)
    v = E.tensor([1.0, 0.0, -2.0], dtype=E.float64)
    hess = E.autograd.functional.hessian(_cube_sum, x)
    assert_close(hess, 6 * x * E.eye(3, dtype=E.float64), **_F64)
    out, hvp = E.autograd.functional.hvp(_cube_sum, x, v)
    assert_close(out, _cube_sum(x), **_F64)
    assert_close(hvp, 6 * x * v, **_F64)
    _, vhp = E.autograd.functional.vhp(_cube_sum, x, v)
    assert_close(vhp, hvp, **_F64)


@case("Using autograd.grad(allow_unused=False), an error stating that the output is "
      "independent of the input", source=AUTOGRAD_NOTE)
def strict_mode_rejects_independent_outputs(E):
    x = _x(E)
    const = lambda t: E.ones(3, dtype=E.float64)  # noqa: E731
    assert_close(E.autograd.functional.jacobian(const, x), E.zeros(3, 3, dtype=E.float64))
    with pytest.raises(RuntimeError, match="strict mode"):
        E.autograd.functional.jacobian(const, x, strict=True)


@case("When computing the forward pass, autograd simultaneously performs the requested "
      "computations and builds up a graph representing the function that computes the "
      "gradient", source=MECHANICS)
def create_graph_makes_results_differentiable(E):
    x = _x(E).requires_grad_()
    jac = E.autograd.functional.jacobian(lambda t: t ** 3, x, create_graph=True)
    assert jac.requires_grad
    jac.sum().backward()
    assert_close(x.grad, 6 * x.detach(), **_F64)
