"""A custom Function under refengine.vmap with inputs that require grad.

It raised "autograd.grad and backward on batched tensors are not supported
inside vmap" at the forward (the Function's node took the grad edges of the
batched arguments); torch runs it (with generate_vmap_rule=True or a rule of
its own) and differentiates through it. It now runs once per example where
the result must be differentiable, its results stacked; without grad the
forward runs on the batch as before. Expected values are the analytic
derivatives of x**3."""
from __future__ import annotations

import numpy as np
import pytest

from adcheck import refengine as E


class Cube(E.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * x * g


def _x():
    return np.random.default_rng(0).uniform(-1.5, 1.5, (3, 4))


@pytest.mark.parametrize("in_dims", [0, 1])
def test_grad_through_vmap_of_a_function(in_dims):
    a = _x() if in_dims == 0 else _x().T.copy()
    x = E.tensor(a, requires_grad=True)
    y = E.vmap(Cube.apply, in_dims=in_dims)(x)
    assert np.allclose(y.detach().numpy(), (a ** 3) if in_dims == 0 else (a ** 3).T)
    (g,) = E.autograd.grad(y.sum(), x, create_graph=True)
    assert np.allclose(g.detach().numpy(), 3 * a ** 2)
    (gg,) = E.autograd.grad(g.sum(), x)              # the Function's backward, differentiated
    assert np.allclose(gg.numpy(), 6 * a)


def test_a_function_inside_a_vmapped_function_with_other_arguments():
    a, w = _x(), np.linspace(0.5, 2.0, 4)
    x, wt = E.tensor(a, requires_grad=True), E.tensor(w, requires_grad=True)
    y = E.vmap(lambda row, weight: (Cube.apply(row) * weight).sum(), in_dims=(0, None))(x, wt)
    gx, gw = E.autograd.grad(y.sum(), (x, wt))
    assert np.allclose(gx.numpy(), 3 * a ** 2 * w)
    assert np.allclose(gw.numpy(), (a ** 3).sum(0))


def test_without_grad_the_forward_runs_on_the_batch():
    # (no per-example calls: one call of the forward, on the batched tensor)
    calls = []

    class Counted(Cube):
        @staticmethod
        def forward(ctx, x):
            calls.append(tuple(x.shape))
            return x * x * x
    with E.no_grad():
        E.vmap(Counted.apply)(E.tensor(_x(), requires_grad=True))
    assert calls == [(4,)]
