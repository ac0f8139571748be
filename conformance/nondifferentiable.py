"""Gradients at points where a function is not differentiable, and the
division-by-zero masking pitfall."""
from __future__ import annotations

import math

import pytest

from adcheck.conformance.case import AUTOGRAD_NOTE, MECHANICS, case


def _at(E, *values):
    return E.tensor(list(values), dtype=E.float64, requires_grad=True)


def _grad(E, fn, *values):
    x = _at(E, *values)
    fn(x).sum().backward()
    return x.grad.tolist()


@case("If the function is differentiable and thus a gradient exists at the current "
      "point, use it.", source=MECHANICS)
def rule1_use_the_gradient_where_it_exists(E):
    assert _grad(E, E.relu, 2.0, -2.0) == [1.0, 0.0]
    assert _grad(E, E.abs, 3.0, -3.0) == [1.0, -1.0]
    assert _grad(E, E.sqrt, 4.0) == [0.25]


@case("If the function is convex (at least locally), use the sub-gradient of minimum "
      "norm.", source=MECHANICS)
def rule2_convex_minimum_norm_subgradient(E):
    assert _grad(E, E.relu, 0.0) == [0.0]
    assert _grad(E, E.abs, 0.0) == [0.0]
    assert _grad(E, lambda x: E.abs(x - 1) + E.relu(x - 1), 1.0) == [0.0]


@case("If the function is concave (at least locally), use the super-gradient of minimum "
      "norm (consider -f(x) and apply the previous point).", source=MECHANICS)
def rule3_concave_minimum_norm_supergradient(E):
    assert _grad(E, lambda x: -E.abs(x), 0.0) == [0.0]
    assert _grad(E, lambda x: -E.relu(x), 0.0) == [0.0]


@case("If the function is defined, define the gradient at the current point by "
      "continuity (note that inf is possible here, for example for sqrt(0)).",
      source=MECHANICS)
def rule4_continuity_allows_inf(E):
    assert _grad(E, E.sqrt, 0.0) == [math.inf]


@case("If multiple values are possible, pick one arbitrarily.", source=MECHANICS)
def rule4_ties_pick_a_valid_gradient(E):
    for reduce, point in ((lambda x: x.max(), (1.0, 3.0, 3.0)),
                          (lambda x: x.amax(), (1.0, 3.0, 3.0)),
                          (lambda x: x.min(), (3.0, 1.0, 1.0))):
        g = _grad(E, reduce, *point)
        assert g[0] == 0.0 and all(0.0 <= v <= 1.0 for v in g), g
        assert abs(sum(g) - 1.0) < 1e-12, g


@case("If the function is not defined (sqrt(-1), log(-1) or most functions when the "
      "input is NaN, for example) then the value used as the gradient is arbitrary ... "
      "Most functions will use NaN as the gradient", source=MECHANICS)
def rule5_undefined_points_give_nan(E):
    assert math.isnan(_grad(E, E.sqrt, -1.0)[0])
    assert math.isnan(_grad(E, E.sin, math.nan)[0])
    assert math.isnan(_grad(E, E.exp, math.nan)[0])


@case("If the function is not a deterministic mapping (i.e. it is not a mathematical "
      "function), it will be marked as non-differentiable. This will make it error out in "
      "the backward if used on tensors that require grad outside of a no_grad "
      "environment.", source=MECHANICS)
def rule6_non_differentiable_outputs_error_in_backward(E):
    x = _at(E, 1.0, 3.0, 2.0)
    values, indices = E.max(x, dim=0)
    assert values.requires_grad and not indices.requires_grad and indices.grad_fn is None
    with pytest.raises(RuntimeError, match="does not require grad and does not have a "
                                           "grad_fn"):
        indices.sum().backward()
    values.backward()
    assert x.grad.tolist() == [0.0, 1.0, 0.0]


@case("consider the gradient at 0 of the identity function when it is decomposed as "
      "id(x) = relu(x) - relu(-x).", source=AUTOGRAD_NOTE)
def identity_as_relu_difference_is_wrong_at_zero(E):
    assert _grad(E, lambda x: E.relu(x) - E.relu(-x), 0.0, 2.0) == [0.0, 1.0]


@case("In particular, if the sum is 0, the square root function is not differentiable at "
      "this point and so the returned gradient can be anything while the 2 norm function "
      "has a well defined gradient at 0 of 0.", source=AUTOGRAD_NOTE)
def norm_at_zero_versus_sqrt_of_sum(E):
    assert _grad(E, lambda x: E.norm(x), 0.0, 0.0) == [0.0, 0.0]
    assert _grad(E, lambda x: E.linalg.vector_norm(x), 0.0, 0.0) == [0.0, 0.0]
    assert _grad(E, lambda x: E.norm(x), 3.0, 4.0) == [0.6, 0.8]
    assert all(math.isnan(v) for v in _grad(E, lambda x: (x * x).sum().sqrt(), 0.0, 0.0))


@case("This is because a gradient of 0 should propagate the non-finite values while an "
      "independent gradient should propagate an independent gradient (which is the same "
      "as 0).", source=AUTOGRAD_NOTE)
def zero_gradient_propagates_non_finite_values(E):
    x = _at(E, 2.0)
    (g,) = E.autograd.grad(x * 0.0, x, grad_outputs=E.tensor([math.inf], dtype=E.float64))
    assert math.isnan(g.item())
    y = _at(E, 2.0)
    (gy,) = E.autograd.grad((x * 3).sum(), y, allow_unused=True)
    assert gy is None


@case("This is a problem when trying to hide pathological points with indexing",
      source=AUTOGRAD_NOTE)
def where_does_not_hide_a_pathological_branch(E):
    x = _at(E, 0.0, 4.0)
    E.where(x > 0, E.sqrt(x), E.zeros_like(x)).sum().backward()
    assert math.isnan(x.grad[0].item()) and x.grad[1].item() == 0.25
    x2 = _at(E, 0.0, 4.0)
    safe = E.where(x2 > 0, x2, E.ones_like(x2))
    E.where(x2 > 0, E.sqrt(safe), E.zeros_like(x2)).sum().backward()
    assert x2.grad.tolist() == [0.0, 0.25]


@case("y = x / div # Results in [inf, 1] ... print(x.grad) # [nan, 1], not [0, 1]",
      source=MECHANICS)
def division_by_zero_masked_after_gives_nan(E):
    x = E.tensor([1.0, 1.0], requires_grad=True)
    div = E.tensor([0.0, 1.0])
    y = x / div
    assert y.tolist() == [math.inf, 1.0]
    mask = div != 0
    assert mask.tolist() == [False, True]
    loss = y[mask].sum()
    loss.backward()
    assert math.isnan(x.grad[0].item()) and x.grad[1].item() == 1.0


@case("Mask before division: ... loss.backward() # Produces safe gradients [0, 1]",
      source=MECHANICS)
def division_by_zero_masked_before_gives_zero(E):
    x = E.tensor([1.0, 1.0], requires_grad=True)
    div = E.tensor([0.0, 1.0])
    mask = div != 0
    safe = E.zeros_like(x)
    safe[mask] = x[mask] / div[mask]
    loss = safe.sum()
    loss.backward()
    assert x.grad.tolist() == [0.0, 1.0]


@case("If the function is differentiable and thus a gradient exists at the current "
      "point, use it.", source=MECHANICS)
def piecewise_constant_functions_have_zero_gradient(E):
    for fn in (E.floor, E.ceil, E.round, E.trunc, E.sign):
        assert _grad(E, fn, 0.5, 1.5, -2.25) == [0.0, 0.0, 0.0]
