"""Modules and nested inputs as check targets (``gradcheck.core.modules``).

A layer whose weight gradient is wrong must fail naming the weight, with the
diagnosis, while its input gradient passes; the right layer must pass. The
oracle for "wrong" is torch's own gradcheck on the same layer through
``torch.func.functional_call`` (the workaround users write by hand), and the
engine twin of each case is the same formula in refengine.
"""
from __future__ import annotations

import numpy as np
import pytest
from gradcheck_support import load_engine

from adcheck import gradcheck
from adcheck.gradcheck import GradcheckError, check

RNG = np.random.default_rng(3)
W, B, X = RNG.standard_normal((2, 3)), RNG.standard_normal(2), RNG.standard_normal((4, 3))


def linear_function(E, weight_factor: float):
    """``x @ w.T`` as an autograd Function of engine ``E`` whose weight gradient is
    ``weight_factor`` times the right one."""
    class LinearFn(E.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return x @ w.T

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            return g @ w, weight_factor * (g.T @ x)
    return LinearFn


def layer(E, weight_factor: float = 1.0, frozen_bias: bool = False):
    """A custom layer ``LinearFn(x, weight) + bias`` of engine ``E``."""
    fn = linear_function(E, weight_factor)

    class MyLinear(E.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = E.nn.Parameter(E.tensor(W, dtype=E.float64))
            self.bias = E.nn.Parameter(E.tensor(B, dtype=E.float64),
                                       requires_grad=not frozen_bias)

        def forward(self, x):
            return fn.apply(x, self.weight) + self.bias
    return MyLinear()


def x_of(E):
    return E.tensor(X, dtype=E.float64, requires_grad=True)


@pytest.mark.parametrize("engine", ["torch", "refengine"])
def test_a_wrong_weight_gradient_fails_naming_the_weight(engine):
    E = load_engine(engine)
    report = check(layer(E, weight_factor=2.0), (x_of(E),), precise=True)
    assert not report.passed
    assert report.input_names == ["x", "weight", "bias"]
    assert {(f.in_idx, f.in_name) for f in report.failures} == {(1, "weight")}
    assert "2 times numerical" in report.diagnosis
    assert report.message().startswith("MyLinear: reverse-mode Jacobian differs from numerical "
                                       "for output 0, input 1 (weight)")
    assert report.to_dict()["failures"][0]["in_name"] == "weight"


def test_torch_agrees_that_the_weight_gradient_is_wrong():
    # the oracle: torch's gradcheck through functional_call, written by hand
    torch = load_engine("torch")
    wrong, right = layer(torch, 2.0), layer(torch, 1.0)
    for module, expected in ((wrong, False), (right, True)):
        weight = module.weight.detach().clone().requires_grad_()

        def f(x, w, module=module):
            return torch.func.functional_call(module, {"weight": w}, (x,))
        assert torch.autograd.gradcheck(f, (x_of(torch), weight),
                                        raise_exception=False) is expected


@pytest.mark.parametrize("engine", ["torch", "refengine"])
def test_the_right_layer_passes_and_is_left_unchanged(engine):
    E = load_engine(engine)
    module = layer(E)
    before = [(n, p, p.detach().numpy().copy()) for n, p in module.named_parameters()]
    assert gradcheck.gradcheck(module, (x_of(E),))
    after = list(module.named_parameters())
    assert [(n, id(p)) for n, p, _ in before] == [(n, id(p)) for n, p in after]
    for (_, _, values), (_, p) in zip(before, after):
        np.testing.assert_array_equal(values, p.detach().numpy())
        assert p.grad is None


@pytest.mark.parametrize("engine", ["torch", "refengine"])
def test_gradcheck_raises_naming_the_parameter(engine):
    E = load_engine(engine)
    with pytest.raises(GradcheckError, match=r"input 1 \(weight\)"):
        gradcheck.gradcheck(layer(E, 2.0), (x_of(E),))


def test_a_frozen_parameter_is_held_fixed():
    torch = load_engine("torch")
    report = check(layer(torch, frozen_bias=True), (x_of(torch),))
    assert report.passed
    assert report.input_names == ["x", "weight", "bias"]      # bias: a constant input
    assert {r.in_name for r in report.results if r.in_idx is not None} == {"x", "weight"}


def _scaled(E, rule_factor: float):
    """A module multiplying by its buffer ``scale`` through a Function whose
    gradient for the scale is ``rule_factor`` times the right one."""
    class Scale(E.autograd.Function):
        @staticmethod
        def forward(ctx, x, s):
            ctx.save_for_backward(x, s)
            return x * s

        @staticmethod
        def backward(ctx, g):
            x, s = ctx.saved_tensors
            return g * s, rule_factor * (g * x)

    class Scaled(E.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("scale", E.tensor(RNG.standard_normal(3), dtype=E.float64))

        def forward(self, x):
            return Scale.apply(x, self.scale)
    return Scaled()


@pytest.mark.parametrize("engine", ["torch", "refengine"])
def test_buffers_are_checked_only_when_asked(engine):
    E = load_engine(engine)
    x = E.tensor(RNG.standard_normal(3), dtype=E.float64, requires_grad=True)
    assert check(_scaled(E, 3.0), (x,)).passed                 # the buffer is a constant
    report = check(_scaled(E, 3.0), (x,), buffers=True)
    assert report.input_names == ["x", "scale"]
    assert {f.in_name for f in report.failures} == {"scale"}
    assert check(_scaled(E, 1.0), (x,), buffers=True).passed


@pytest.mark.parametrize("engine", ["torch", "refengine"])
def test_nested_layers_and_tied_weights_are_named_once(engine):
    E = load_engine(engine)
    net = E.nn.Sequential(E.nn.Linear(3, 3, dtype=E.float64), E.nn.Linear(3, 2, dtype=E.float64))
    tied = E.nn.Sequential(E.nn.Linear(3, 3, dtype=E.float64),
                           E.nn.Linear(3, 3, bias=False, dtype=E.float64))
    tied[1].weight = tied[0].weight
    report = check(net, (x_of(E),), precise=True)
    assert report.passed
    assert report.input_names == ["input", "0.weight", "0.bias", "1.weight", "1.bias"]
    report = check(tied, (x_of(E),), precise=True)
    assert report.passed and report.input_names == ["input", "0.weight", "0.bias"]
    # the shared weight moves both layers: its Jacobian is the derivative through both,
    # which central differences on the module itself give independently
    w = tied[0].weight
    expected = np.empty((12, 9))
    for k in range(9):
        columns = []
        for step in (1e-6, -1e-6):
            with E.no_grad():
                w.view(-1)[k] += step
                columns.append(tied(E.tensor(X, dtype=E.float64)).detach().numpy().ravel())
                w.view(-1)[k] -= step
        expected[:, k] = (columns[0] - columns[1]) / 2e-6
    np.testing.assert_allclose(report.jacobians["reverse"][0, 1], expected, atol=1e-7)


def test_a_nested_dict_of_parameters_is_checked_leaf_by_leaf():
    torch = load_engine("torch")
    fn = linear_function(torch, 2.0)

    def model(params, x):
        return fn.apply(x, params["dense"]["kernel"]) + params["dense"]["bias"][0]

    params = {"dense": {"kernel": torch.tensor(W, requires_grad=True),
                        "bias": [torch.tensor(B, requires_grad=True), "not a tensor"]}}
    report = check(model, (params, x_of(torch)))
    assert report.input_names == ["params['dense']['kernel']", "params['dense']['bias'][0]",
                                  "x"]
    assert {f.in_name for f in report.failures} == {"params['dense']['kernel']"}


def test_input_names_name_plain_inputs_and_are_checked():
    torch = load_engine("torch")
    x, y = x_of(torch), torch.tensor(X, requires_grad=True)
    report = check(lambda a, b: a * b, (x, y), input_names=["left", "right"])
    assert report.input_names == ["left", "right"]
    with pytest.raises(ValueError, match="input_names has 1 names for 2 inputs"):
        check(lambda a, b: a * b, (x, y), input_names=["left"])
    with pytest.raises(ValueError, match="buffers=True applies to an nn.Module"):
        check(lambda a, b: a * b, (x, y), buffers=True)


def test_second_order_names_the_grad_outputs():
    torch = load_engine("torch")
    report = check(torch.nn.Linear(3, 2, dtype=torch.float64), (x_of(torch),), order=2)
    assert report.passed
    assert report.input_names == ["input", "weight", "bias", "grad_outputs[0]"]


def test_a_jax_pytree_of_parameters_is_named_by_path():
    jax = pytest.importorskip("jax", reason="jax is not installed (pip install adcheck[jax])")
    import jax.numpy as jnp
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        @jax.custom_vjp
        def dense(x, kernel):
            return x @ kernel

        dense.defvjp(lambda x, k: (x @ k, (x, k)),
                     lambda res, ct: (ct @ res[1].T, 2 * res[0].T @ ct))   # kernel: 2x

        def apply(params, x):
            return jnp.tanh(dense(x, params["dense"]["kernel"]) + params["dense"]["bias"])

        params = {"dense": {"kernel": jnp.asarray(W.T), "bias": jnp.asarray(B)}}
        report = check(apply, (params, jnp.asarray(X)), precise=True)
    finally:
        jax.config.update("jax_enable_x64", previous)
    assert report.input_names == ["params['dense']['bias']", "params['dense']['kernel']", "x"]
    assert {f.in_name for f in report.failures} == {"params['dense']['kernel']"}
    assert "2 times numerical" in report.diagnosis
