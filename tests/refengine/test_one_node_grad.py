"""``autograd.grad`` through one op node (``refengine/autograd/onenode.py``).

The plain case (inputs -> one op -> output, no hooks) skips the graph task;
every other case falls back to it. Each scenario is one program written
against an engine module ``M`` and run on refengine and on torch (the
oracle); a spy on the graph task says which path refengine took, so that a
fall-back case cannot pass by the one-node path (or the plain case by the
engine).
"""
from __future__ import annotations

import numpy as np
import pytest

import adcheck.refengine as E
import adcheck.refengine.autograd.api as api

X = np.array([[0.3, -1.2, 0.7], [1.5, 0.2, -0.4]])
Y = np.array([[-0.6, 0.9, 1.1], [0.25, -1.3, 0.8]])
G = np.array([[1.0, -2.0, 0.5], [0.75, 1.25, -1.5]])


@pytest.fixture
def tasks(monkeypatch):
    """How many graph tasks refengine's grad() ran."""
    made = []
    real = api.GraphTask

    def counting(*args, **kwargs):
        made.append(1)
        return real(*args, **kwargs)
    monkeypatch.setattr(api, "GraphTask", counting)
    return made


def _leaf(M, a):
    return M.tensor(a.copy(), dtype=M.float64, requires_grad=True)


def _values(ts):
    return [None if t is None else np.array(t.detach().numpy()) for t in ts]


def _same(ours, theirs):
    assert len(ours) == len(theirs)
    for a, b in zip(_values(ours), _values(theirs)):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-14, atol=0)


def _both(torch, program, tasks):
    ours = program(E)
    ran = len(tasks)
    return ours, program(torch), ran


# ----- the plain case: no graph task, torch's gradients

def _exp(M):
    x = _leaf(M, X)
    return M.autograd.grad(M.exp(x), x, M.tensor(G))


def _same_leaf_twice(M):
    x = _leaf(M, X)
    return M.autograd.grad(x * x, x, M.tensor(G))


def _broadcast_and_unused(M):
    x, y, z = _leaf(M, X), _leaf(M, Y[0]), _leaf(M, Y)
    return M.autograd.grad(M.mul(x, y), (y, x, z, y), M.tensor(G), allow_unused=True)


def _batched(M):
    x, y = _leaf(M, X), _leaf(M, Y.T)
    gs = M.tensor(np.stack([G[:, :2], -G[:, :2], 2 * G[:, 1:]]))
    return M.autograd.grad(M.matmul(x, y), (x, y), gs, is_grads_batched=True)


@pytest.mark.parametrize("program", [_exp, _same_leaf_twice, _broadcast_and_unused, _batched])
def test_plain_one_node_graph_gives_torchs_gradients_without_a_graph_task(torch, tasks, program):
    ours, theirs, ran = _both(torch, program, tasks)
    assert ran == 0
    _same(ours, theirs)


def test_released_node_refuses_a_second_pass_as_torchs(torch, tasks):
    for M in (E, torch):
        x = _leaf(M, X)
        out = M.exp(x)
        M.autograd.grad(out, x, M.tensor(G))
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            M.autograd.grad(out, x, M.tensor(G))
    assert len(tasks) == 0


def test_input_changed_in_place_raises_the_version_error_as_torchs(torch, tasks):
    for M in (E, torch):
        x = _leaf(M, X)
        y = _leaf(M, Y)
        v = y * 1.0
        out = x * v
        with M.no_grad():
            v.add_(1.0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            M.autograd.grad(out, x, M.tensor(G))
    # v's own node is below the product: two nodes, the general engine
    assert len(tasks) == 1


def test_leaf_changed_in_place_after_the_op_raises_as_torchs(torch, tasks):
    for M in (E, torch):
        x, y = _leaf(M, X), _leaf(M, Y)
        out = x * y
        with M.no_grad():
            y.mul_(2.0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            M.autograd.grad(out, x, M.tensor(G))
    assert len(tasks) == 0


# ----- every case beyond the plain one runs the graph task, with torch's results

def _leaf_hook(M):
    x = _leaf(M, X)
    x.register_hook(lambda g: g * 3.0)
    return M.autograd.grad(M.sin(x), x, M.tensor(G))


def _output_hook(M):
    x = _leaf(M, X)
    out = M.sin(x)
    out.register_hook(lambda g: g - 1.0)
    return M.autograd.grad(out, x, M.tensor(G))


def _node_prehook(M):
    x = _leaf(M, X)
    out = M.exp(x)
    out.grad_fn.register_prehook(lambda gs: (gs[0] * 0.5,))
    return M.autograd.grad(out, x, M.tensor(G))


def _node_posthook(M):
    x = _leaf(M, X)
    out = M.exp(x)
    out.grad_fn.register_hook(lambda gi, go: (gi[0] + 1.0,))
    return M.autograd.grad(out, x, M.tensor(G))


def _retain_grad(M):
    x = _leaf(M, X)
    out = M.exp(x)
    out.retain_grad()
    gx, = M.autograd.grad(out, x, M.tensor(G))
    return gx, out.grad


def _saved_tensor_hooks(M):
    x = _leaf(M, X)
    # the unpack hook changes the saved value: the gradient shows it was used
    with M.autograd.graph.saved_tensors_hooks(lambda t: t * 2.0, lambda t: t + 1.0):
        out = M.exp(x)
    return M.autograd.grad(out, x, M.tensor(G))


def _create_graph(M):
    x = _leaf(M, X)
    gx, = M.autograd.grad(M.sin(x), x, M.tensor(G), create_graph=True)
    assert gx.requires_grad
    return M.autograd.grad(gx, x, M.tensor(G))


def _non_leaf_target(M):
    x = _leaf(M, X)
    h = x * 2.0
    return M.autograd.grad(M.exp(h), (h, x), M.tensor(G))


def _output_as_target(M):
    x = _leaf(M, X)
    out = M.exp(x)
    return M.autograd.grad(out, (out, x), M.tensor(G))


def _two_outputs(M):
    x, y = _leaf(M, X), _leaf(M, Y)
    return M.autograd.grad((x * y, M.exp(x)), (x, y), (M.tensor(G), M.tensor(-G)))


def _custom_function(M):
    class Cube(M.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t ** 3

        @staticmethod
        def backward(ctx, g):
            t, = ctx.saved_tensors
            return 3 * t * t * g
    x = _leaf(M, X)
    return M.autograd.grad(Cube.apply(x), x, M.tensor(G))


@pytest.mark.parametrize("program", [
    _leaf_hook, _output_hook, _node_prehook, _node_posthook, _retain_grad,
    _saved_tensor_hooks, _create_graph, _non_leaf_target, _output_as_target, _two_outputs,
    _custom_function])
def test_anything_beyond_the_plain_case_runs_the_graph_task_with_torchs_results(
        torch, tasks, program):
    ours, theirs, ran = _both(torch, program, tasks)
    assert ran >= 1
    _same(ours, theirs)


def test_removed_hook_leaves_the_plain_case(torch, tasks):
    def program(M):
        x = _leaf(M, X)
        handle = x.register_hook(lambda g: g * 3.0)
        handle.remove()
        return M.autograd.grad(M.sin(x), x, M.tensor(G))
    ours, theirs, ran = _both(torch, program, tasks)
    assert ran == 0
    _same(ours, theirs)
