"""A harvested Function's failure numbers its input as the Function's own
tensor arguments count it (and as the whole model's check does), not among
the differentiated ones alone: ``forward(ctx, x, high, scale)`` with only
``high`` requiring grad fails at "input 1 (high)", not "input 0 (high)"."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch)")

from adcheck import gradcheck  # noqa: E402


class Clamp(torch.autograd.Function):
    """min(x, high) * scale, the gradient in ``high`` off by 2 / scale."""

    @staticmethod
    def forward(ctx, x, high, scale):
        ctx.save_for_backward(x, high)
        ctx.scale = scale
        return torch.minimum(x, high) * scale

    @staticmethod
    def backward(ctx, g):
        x, high = ctx.saved_tensors
        return g * (x < high) * ctx.scale, 2 * g * (x >= high), None


class Capped(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.high = torch.nn.Parameter(torch.full((4, 3), 0.3, dtype=torch.float64))

    def forward(self, x):
        return Clamp.apply(x, self.high, 1.5).sum()


def _data():
    return torch.from_numpy(np.random.default_rng(0).standard_normal((4, 3)))


def test_the_failure_is_at_the_functions_second_tensor_argument():
    found = gradcheck.harvest(Capped(), (_data(),), seed=0)
    (report,) = found.reports["(root):Clamp"]
    (failure,) = [r for r in report.failures if r.check == "reverse"]
    assert (failure.in_idx, failure.in_name) == (1, "high")
    assert report.input_names == ["x", "high"]
    # (the data batch is an input of the check that is not differentiated)
    assert all(r.in_idx != 0 for r in report.results if r.in_idx is not None)


def test_the_whole_models_check_numbers_the_parameter_the_same():
    found = gradcheck.harvest(Capped(), (_data(),), seed=0)
    failure = next(r for r in found.model.failures if r.in_name == "high")
    assert failure.in_idx == 1


def test_the_wrong_gradient_is_wrong_by_central_differences():
    x, high = _data(), torch.full((4, 3), 0.3, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(Clamp.apply(x, high, 1.5).sum(), high)
    h = 1e-6
    up = (torch.minimum(x, high.detach() + h) * 1.5).sum()
    down = (torch.minimum(x, high.detach() - h) * 1.5).sum()
    fd_total = float((up - down) / (2 * h))      # the sum over high's entries
    assert float(g.sum()) == pytest.approx(fd_total * 2 / 1.5, rel=1e-6)


class SparseScale(torch.autograd.Function):
    """``adj @ (x * w)`` with a sparse ``adj`` that is never differentiated."""

    @staticmethod
    def forward(ctx, adj, x, w):
        ctx.save_for_backward(adj, x, w)
        return torch.sparse.mm(adj, x * w)

    @staticmethod
    def backward(ctx, g):
        adj, x, w = ctx.saved_tensors
        back = torch.sparse.mm(adj.t(), g)
        return None, back * w, (back * x).sum(0)


def test_a_sparse_argument_is_held_and_the_others_still_checked():
    adj = torch.eye(4, dtype=torch.float64).to_sparse()
    w = torch.nn.Parameter(torch.tensor([0.5, 2.0, -1.0], dtype=torch.float64))
    x = _data().requires_grad_(True)
    found = gradcheck.harvest(lambda a, b: SparseScale.apply(a, b, w).sum(), (adj, x),
                              seed=0, model_check=False)
    (report,) = found.reports[next(iter(found.reports))]
    assert report.passed
    assert report.input_names == ["x", "w"]    # (the sparse one held, not an input)


def test_a_jax_rule_numbers_its_arrays_an_integer_one_included():
    jax = pytest.importorskip("jax", reason="jax is not installed (pip install adcheck[jax])")
    jnp = jax.numpy
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        @jax.custom_vjp
        def gather_scale(index, x):
            return x[index] * 3.0

        def fwd(index, x):
            return gather_scale(index, x), (index, x)

        def bwd(res, g):   # x's cotangent WRONG by a factor 2
            index, x = res
            return None, jnp.zeros_like(x).at[index].add(2.0 * g)

        gather_scale.defvjp(fwd, bwd)
        index = jnp.asarray([2, 0, 1])
        found = gradcheck.harvest(lambda x: gather_scale(index, x).sum(),
                                  (jnp.asarray([0.5, -1.0, 2.0]),), seed=0, model_check=False)
        (report,) = next(iter(found.reports.values()))
        (failure,) = [r for r in report.failures if r.check == "reverse"]
        assert (failure.in_idx, failure.in_name) == (1, "x")
    finally:
        jax.config.update("jax_enable_x64", previous)
