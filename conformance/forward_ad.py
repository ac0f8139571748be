"""Forward AD: the standalone API and the scoping of dual levels.

``make_dual`` and ``unpack_dual`` inside a level, what leaving a level does,
the errors for misuse, and how ``detach`` and ``make_dual`` behave as views
in forward mode. Where the design note leaves a choice (``detach``), the
case follows PyTorch. Nested levels are in ``forward_ad_nested``.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from adcheck.conformance.case import FORWARD_AD, case
from adcheck.conformance.compare import assert_close, to_numpy


def _vec(E, values):
    return E.tensor(values, dtype=E.float64)


def _tangent(E, t):
    return E.autograd.forward_ad.unpack_dual(t).tangent


@case("Unpack the result to get both the function and the J v value",
      source=FORWARD_AD)
def make_dual_then_unpack_gives_value_and_jvp(E):
    fwd = E.autograd.forward_ad
    x, v = np.linspace(-1.0, 2.0, 10), np.linspace(0.5, -0.5, 10)
    with fwd.dual_level():
        dual_x = fwd.make_dual(_vec(E, x), _vec(E, v))
        res = dual_x.sin() * dual_x.exp()
        unpacked = fwd.unpack_dual(res)
        f_val, jvp = unpacked
        assert unpacked.primal is f_val and unpacked.tangent is jvp
        assert_close(f_val, np.sin(x) * np.exp(x), rtol=1e-12)
        assert_close(jvp, (np.cos(x) + np.sin(x)) * np.exp(x) * v, rtol=1e-12)
        assert _tangent(E, f_val) is None, "the primal of an unpacked dual has no tangent"


@case("When exiting a level, all dual Tensors from this level become regular "
      "Tensors again.", source=FORWARD_AD)
def unpack_dual_outside_the_level_gives_none(E):
    fwd = E.autograd.forward_ad
    x, v = E.rand(10, dtype=E.float64), E.rand(10, dtype=E.float64)
    with fwd.dual_level():
        dual_x = fwd.make_dual(x, v)
        _, jvp = fwd.unpack_dual(dual_x)
        assert jvp is not None
    primal, jvp = fwd.unpack_dual(dual_x)
    assert jvp is None
    assert_close(primal, x, rtol=0, atol=0)


@case("When exiting a level, all dual Tensors from this level become regular "
      "Tensors again.", source=FORWARD_AD)
def leaving_a_level_clears_every_tangent(E):
    fwd = E.autograd.forward_ad
    with fwd.dual_level():
        a = fwd.make_dual(_vec(E, [1.0, 2.0, 3.0]), _vec(E, [1.0, 0.0, 0.0]))
        b = a * 2                    # an op result
        view = a[1:]                 # a view of a dual
        buf = E.zeros(3, dtype=E.float64)
        buf.copy_(a)                 # a tensor made dual by an in-place op
        duals = [a, b, view, buf]
        assert all(_tangent(E, t) is not None for t in duals)
    assert all(_tangent(E, t) is None for t in duals)
    with fwd.dual_level():           # a new level does not bring them back
        assert all(_tangent(E, t) is None for t in duals)
        assert _tangent(E, b * a) is None


@case("Create a level that is given context where your dual objects live",
      source=FORWARD_AD)
def make_dual_outside_any_level_raises(E):
    fwd = E.autograd.forward_ad
    with pytest.raises(RuntimeError, match="level"):
        fwd.make_dual(E.ones(2, dtype=E.float64), E.ones(2, dtype=E.float64))


@case("This API uses the current level by default", source=FORWARD_AD)
def explicit_enter_and_exit_with_level_keyword(E):
    fwd = E.autograd.forward_ad
    level = fwd.enter_dual_level()
    try:
        assert isinstance(level, int)
        d = fwd.make_dual(_vec(E, [1.0, 2.0]), _vec(E, [3.0, 4.0]), level=level)
        assert_close(fwd.unpack_dual(d, level=level).tangent, [3.0, 4.0])
        assert_close(fwd.unpack_dual(d).tangent, [3.0, 4.0])
        assert_close(fwd.unpack_dual(d ** 2, level=level).tangent, [6.0, 16.0])
    finally:
        fwd.exit_dual_level()
    assert fwd.unpack_dual(d).tangent is None


@case("This API uses the current level by default", source=FORWARD_AD)
def dual_level_context_yields_the_current_level(E):
    fwd = E.autograd.forward_ad
    with fwd.dual_level() as level:
        d = fwd.make_dual(_vec(E, [2.0]), _vec(E, [1.0]))
        assert_close(fwd.unpack_dual(d, level=level).tangent, [1.0])


@case("In functional formulation of dual tensors, a dual tensor is a pair of "
      "primal and tangent tensors.", source=FORWARD_AD)
def tangent_must_have_the_primal_shape(E):
    fwd = E.autograd.forward_ad
    with fwd.dual_level():
        with pytest.raises(RuntimeError):
            fwd.make_dual(E.zeros(3, dtype=E.float64), E.ones(4, dtype=E.float64))


@case("assert p.tangent is None", source=FORWARD_AD)
def make_dual_of_a_dual_at_the_same_level_raises(E):
    fwd = E.autograd.forward_ad
    with fwd.dual_level():
        d = fwd.make_dual(E.zeros(3, dtype=E.float64), E.ones(3, dtype=E.float64))
        with pytest.raises(RuntimeError, match="already has a forward gradient"):
            fwd.make_dual(d, E.ones(3, dtype=E.float64))


@case("A good way to model this is to introduce dual numbers where the "
      "imaginary dimension represent the partial Jacobian vector product while "
      "the real part represent the function value.", source=FORWARD_AD)
def integer_primal_cannot_be_dual(E):
    fwd = E.autograd.forward_ad
    with fwd.dual_level():
        with pytest.raises(ValueError, match="floating point or complex"):
            fwd.make_dual(E.arange(3), E.arange(3))


@case("Each operation on such Tensor is then responsible for updating the "
      "outputs dual values based on the inputs dual values.", source=FORWARD_AD)
def only_ops_on_duals_produce_tangents(E):
    fwd = E.autograd.forward_ad
    with fwd.dual_level():
        d = fwd.make_dual(_vec(E, [0.5, -1.0, 2.0]), _vec(E, [1.0, 1.0, 1.0]))
        plain = _vec(E, [1.0, 2.0, 3.0])
        assert _tangent(E, plain * 3) is None
        assert _tangent(E, plain.mul_(2)) is None
        # Outputs that are not differentiable (bool, integer) carry no tangent.
        assert _tangent(E, d > 0) is None
        assert _tangent(E, E.max(d, dim=0).indices) is None
        assert_close(_tangent(E, d * plain), [2.0, 4.0, 6.0])


@case("each sub-product is done in the same order as the forward functions and "
      "thus the forward mode AD can run at the same time as the forward pass.",
      source=FORWARD_AD)
def forward_ad_runs_under_no_grad(E):
    """Forward AD does not depend on grad mode: tangents flow under no_grad."""
    fwd = E.autograd.forward_ad
    with fwd.dual_level(), E.no_grad():
        d = fwd.make_dual(_vec(E, [0.0, math.pi / 2]), _vec(E, [1.0, 2.0]))
        assert_close(_tangent(E, d.cos() * 3), [0.0, -6.0], atol=1e-12)


@case("`detach` is backward non-differentiable and forward differentiable",
      source=FORWARD_AD)
def detach_drops_the_tangent_as_pytorch_does(E):
    """The note calls detach forward differentiable; PyTorch chose otherwise and
    wins: the result of detach has no tangent at any level, shares the primal's
    memory, and an in-place dual update of it leaves the original's tangent."""
    fwd = E.autograd.forward_ad
    with fwd.dual_level():
        d = fwd.make_dual(_vec(E, [1.0, 2.0]), _vec(E, [5.0, 6.0]))
        e = d.detach()
        assert _tangent(E, e) is None
        e.add_(fwd.make_dual(_vec(E, [1.0, 1.0]), _vec(E, [7.0, 7.0])))
        assert_close(fwd.unpack_dual(d).primal, [2.0, 3.0])
        assert_close(_tangent(E, d), [5.0, 6.0])
        assert_close(_tangent(E, e), [7.0, 7.0])


@case("operations, like `fwAD.make_dual`, are backward differentiable and "
      "forward non-differentiable.", source=FORWARD_AD)
def make_dual_is_backward_differentiable(E):
    fwd = E.autograd.forward_ad
    x = _vec(E, [1.0, -2.0, 3.0]).requires_grad_()
    with fwd.dual_level():
        y = fwd.make_dual(x, _vec(E, [1.0, 1.0, 1.0]))
        assert y.grad_fn is not None
        (y * y).sum().backward()
    assert_close(x.grad, 2 * to_numpy(x), rtol=1e-12)


@case("operations, like `fwAD.make_dual`, are backward differentiable and "
      "forward non-differentiable.", source=FORWARD_AD)
def make_dual_is_a_view_of_its_primal(E):
    fwd = E.autograd.forward_ad
    x = _vec(E, [1.0, 2.0, 3.0])
    with fwd.dual_level():
        y = fwd.make_dual(x, _vec(E, [1.0, 1.0, 1.0]))
        assert y._is_view() and y._base is x
        y.mul_(2)
        assert_close(x, [2.0, 4.0, 6.0])
        assert _tangent(E, x) is None, "the primal must not take y's tangent"
        assert_close(_tangent(E, y), [2.0, 2.0, 2.0])
