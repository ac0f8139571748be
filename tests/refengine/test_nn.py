"""refengine.nn (Parameter, Module, Linear, Dropout, Sequential) against torch.nn and maths.

Modules are built the same way in both engines (same weights copied across);
hooks must receive the same gradients, names must come in the same order.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import adcheck.refengine as E
from adcheck.refengine import nn

try:
    import torch as _torch
except ImportError:  # the oracle is optional: tests that need it skip
    _torch = None




def arr(t) -> np.ndarray:
    return np.asarray(t.detach().numpy())


def same_weights(ours: nn.Linear, theirs) -> None:
    """Copy a torch Linear's parameters into ours."""
    ours.weight = nn.Parameter(E.tensor(arr(theirs.weight), dtype=E.float64))
    ours.bias = nn.Parameter(E.tensor(arr(theirs.bias), dtype=E.float64))


def assert_grads_equal(ours: tuple, theirs: tuple) -> None:
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert (o is None) == (t is None), (o, t)
        if t is not None:
            np.testing.assert_allclose(arr(o), arr(t), rtol=1e-12)


# ----- Parameter -----------------------------------------------------------------
def test_parameter_requires_grad_and_prints_like_torch(torch):
    ours = nn.Parameter(E.tensor([1., 2.]))
    theirs = torch.nn.Parameter(torch.tensor([1., 2.]))
    assert ours.requires_grad and ours.is_leaf
    assert repr(ours) == repr(theirs)
    assert not nn.Parameter(E.tensor([1.]), requires_grad=False).requires_grad


def test_parameter_shares_memory_and_leaves_the_graph():
    x = E.tensor([1., 2.], requires_grad=True)
    y = x * 2
    p = nn.Parameter(y)
    assert p.grad_fn is None and p.is_leaf
    with E.no_grad():
        y.add_(1)
    assert p.tolist() == [3., 5.]


# ----- Module: registration and traversal ----------------------------------------
def build_net(M):
    """The same nested module in either engine."""
    class Net(M.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = M.nn.Linear(3, 4)
            self.seq = M.nn.Sequential(M.nn.Linear(4, 4), M.nn.Dropout(0.2), M.nn.Linear(4, 2))
            self.scale = M.nn.Parameter(M.ones(2))
            self.again = self.lin          # shared: listed once
            self.plain = M.ones(2)         # a tensor attribute, not a parameter

        def forward(self, x):
            return self.seq(self.lin(x)) * self.scale
    return Net()


def test_named_parameters_names_and_order_match_torch(torch):
    ours, theirs = build_net(E), build_net(torch)
    names = [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_parameters()] == names
    assert names[0] == "scale"
    assert [tuple(p.shape) for p in ours.parameters()] == [tuple(p.shape) for p in theirs.parameters()]
    assert [n for n, _ in ours.named_parameters(recurse=False)] == ["scale"]


def test_modules_and_children_match_torch(torch):
    ours, theirs = build_net(E), build_net(torch)
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert [type(m).__name__ for m in ours.children()] == [type(m).__name__ for m in theirs.children()]
    assert len(list(ours.modules())) == len(list(theirs.modules())) == 6


def test_repr_matches_torch(torch):
    ours, theirs = build_net(E), build_net(torch)
    assert repr(ours) == repr(theirs)
    assert repr(nn.Linear(2, 3, bias=False)) == repr(torch.nn.Linear(2, 3, bias=False))


def test_assignment_rules_match_torch(torch):
    for M in (E, torch):
        lin = M.nn.Linear(2, 2)
        with pytest.raises(TypeError):
            lin.weight = M.ones(2, 2)          # a plain tensor cannot replace a parameter
        lin.bias = None
        assert [n for n, _ in lin.named_parameters()] == ["weight"]
        seq = M.nn.Sequential(M.nn.Linear(1, 1))
        with pytest.raises(TypeError):
            setattr(seq, "0", 3)
        del lin.weight
        assert list(lin.parameters()) == []

    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(E.ones(1))
    with pytest.raises(AttributeError, match="before Module.__init__"):
        Early()


def test_train_eval_propagate_to_children():
    net = build_net(E)
    assert all(m.training for m in net.modules())
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    with pytest.raises(ValueError):
        net.train("no")


def test_requires_grad_freezes_parameters():
    net = build_net(E)
    net.lin.requires_grad_(False)
    out = net(E.ones(5, 3)).sum()
    out.backward()
    assert net.lin.weight.grad is None and net.lin.bias.grad is None
    assert net.seq[0].weight.grad is not None
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_zero_grad_without_set_to_none_keeps_zeros():
    lin = nn.Linear(2, 1)
    lin(E.ones(2)).sum().backward()
    lin.zero_grad(set_to_none=False)
    assert lin.weight.grad.tolist() == [[0., 0.]]


# ----- Linear -------------------------------------------------------------------
def test_linear_forward_and_gradients_match_torch(torch):
    theirs = torch.nn.Linear(3, 2, dtype=torch.float64)
    ours = nn.Linear(3, 2)
    same_weights(ours, theirs)
    x = np.random.default_rng(0).standard_normal((4, 3))
    out_t = theirs(torch.tensor(x))
    out_o = ours(E.tensor(x, dtype=E.float64))
    np.testing.assert_allclose(arr(out_o), arr(out_t), rtol=1e-12)
    (out_t ** 2).sum().backward()
    (out_o ** 2).sum().backward()
    np.testing.assert_allclose(arr(ours.weight.grad), arr(theirs.weight.grad), rtol=1e-12)
    np.testing.assert_allclose(arr(ours.bias.grad), arr(theirs.bias.grad), rtol=1e-12)


def test_linear_initialisation_is_uniform_within_one_over_sqrt_fan_in():
    E.manual_seed(0)
    lin = nn.Linear(400, 50)
    bound = 1 / np.sqrt(400)
    w = arr(lin.weight).ravel()
    assert np.abs(w).max() <= bound and np.abs(arr(lin.bias)).max() <= bound
    assert w.min() < -0.98 * bound and w.max() > 0.98 * bound
    # U(-b, b): mean 0 and variance b^2 / 3 (20000 samples: 5 standard errors)
    assert abs(w.mean()) < 5 * bound / np.sqrt(3 * w.size)
    assert abs(w.var() - bound ** 2 / 3) < 5 * bound ** 2 * np.sqrt(4 / 45 / w.size)
    E.manual_seed(0)
    assert nn.Linear(400, 50).weight.tolist() == lin.weight.tolist()


def test_linear_without_bias():
    lin = nn.Linear(2, 3, bias=False)
    assert lin.bias is None
    x = E.tensor([[1., 2.]])
    np.testing.assert_allclose(arr(lin(x)), arr(x) @ arr(lin.weight).T)


# ----- Dropout --------------------------------------------------------------------
def test_dropout_in_eval_mode_is_the_identity(torch):
    x = E.ones(100)
    assert nn.Dropout(0.5).eval()(x) is x
    t = torch.ones(100)
    assert torch.nn.Dropout(0.5).eval()(t) is t


@pytest.mark.parametrize("p", [0.2, 0.5, 0.8])
def test_dropout_in_training_zeros_a_fraction_p_and_scales_the_rest(p):
    E.manual_seed(1)
    n = 20000
    x = E.ones(n, requires_grad=True)
    y = nn.Dropout(p)(x)
    values = arr(y)
    dropped = values == 0
    assert abs(dropped.mean() - p) < 5 * np.sqrt(p * (1 - p) / n)
    np.testing.assert_allclose(values[~dropped], 1 / (1 - p), rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(arr(x.grad), values, rtol=1e-6)   # d(mask * x / (1-p))/dx


def test_dropout_extremes_and_errors_match_torch(torch):
    x = E.ones(10, requires_grad=True)
    assert arr(nn.Dropout(0.0)(x)).tolist() == [1.0] * 10
    assert arr(nn.Dropout(1.0)(x)).tolist() == [0.0] * 10
    for M in (E, torch):
        with pytest.raises(ValueError, match="between 0 and 1, but got 1.5"):
            M.nn.Dropout(1.5)


# ----- full backward hooks ----------------------------------------------------------
def two_in_two_out(M):
    class Mul(M.nn.Module):
        def forward(self, a, b, k=2.0):
            return a * b * k, a + b, 3
    return Mul()


def run_hooked(M, make_module, make_inputs, loss):
    """Register a recording hook, run forward and backward; return the calls."""
    calls = []
    module = make_module(M)
    module.register_full_backward_hook(lambda m, gi, go: calls.append((m, gi, go)))
    out = module(*make_inputs(M))
    loss(out).backward()
    return module, calls


def hook_inputs(M):
    return (M.tensor([1., 2.], dtype=M.float64, requires_grad=True),
            M.tensor([3., 4.], dtype=M.float64), 2.0)


@pytest.mark.parametrize("loss_name", ["first output", "both outputs"])
def test_full_backward_hook_receives_torch_gradients(torch, loss_name):
    losses = {"first output": lambda o: o[0].sum(),
              "both outputs": lambda o: (o[0] * o[0]).sum() + 2 * o[1].sum()}
    mod_o, ours = run_hooked(E, two_in_two_out, hook_inputs, losses[loss_name])
    _, theirs = run_hooked(torch, two_in_two_out, hook_inputs, losses[loss_name])
    assert len(ours) == len(theirs) == 1
    assert ours[0][0] is mod_o
    assert_grads_equal(ours[0][1], theirs[0][1])   # (d/da, zeros for b, None for k)
    assert_grads_equal(ours[0][2], theirs[0][2])   # (g0, g1 or None, None for 3)


def test_full_backward_hook_on_linear_matches_torch_and_fires_once(torch):
    def run(M):
        lin = M.nn.Linear(3, 2, dtype=M.float64)
        return lin
    theirs = run(torch)
    ours = nn.Linear(3, 2)
    same_weights(ours, theirs)
    got = {}
    for key, M, lin in (("ours", E, ours), ("theirs", torch, theirs)):
        calls = []
        lin.register_full_backward_hook(lambda m, gi, go, calls=calls: calls.append((gi, go)))
        x = M.tensor([[0.5, -1., 2.]], dtype=M.float64, requires_grad=True)
        y = lin(x)
        (y * y + y).sum().backward()        # the output is used twice
        got[key] = calls
    assert len(got["ours"]) == len(got["theirs"]) == 1
    assert_grads_equal(got["ours"][0][0], got["theirs"][0][0])
    assert_grads_equal(got["ours"][0][1], got["theirs"][0][1])


def test_hook_return_value_replaces_grad_input_like_torch(torch):
    grads = {}
    for M in (E, torch):
        lin = M.nn.Linear(2, 2, dtype=M.float64)
        with M.no_grad():
            lin.weight.copy_(M.tensor([[1., 2.], [3., 4.]], dtype=M.float64))
        lin.register_full_backward_hook(lambda m, gi, go: (gi[0] * 10,))
        x = M.tensor([1., 1.], dtype=M.float64, requires_grad=True)
        lin(x).sum().backward()
        grads[M.__name__.rpartition(".")[2]] = (arr(x.grad), arr(lin.weight.grad))
    np.testing.assert_allclose(grads["refengine"][0], grads["torch"][0])
    np.testing.assert_allclose(grads["refengine"][0], [40., 60.])
    np.testing.assert_allclose(grads["refengine"][1], grads["torch"][1])   # weights untouched


def test_hook_without_differentiable_inputs_warns_and_gets_none(torch):
    results = {}
    for M in (E, torch):
        calls = []
        lin = M.nn.Linear(2, 1)
        lin.register_full_backward_hook(lambda m, gi, go, calls=calls: calls.append((gi, go)))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lin(M.ones(3, 2)).sum().backward()
        assert any("no inputs require gradients" in str(w.message) for w in caught)
        results[M.__name__.rpartition(".")[2]] = calls
    assert len(results["refengine"]) == len(results["torch"]) == 1
    assert results["refengine"][0][0] == results["torch"][0][0] == (None,)
    assert_grads_equal(results["refengine"][0][1], results["torch"][0][1])


def test_hook_does_not_fire_when_inputs_are_not_reached(torch):
    """autograd.grad with respect to the weight never runs the input side (as torch)."""
    for M in (E, torch):
        calls = []
        lin = M.nn.Linear(2, 1)
        lin.register_full_backward_hook(lambda m, gi, go, calls=calls: calls.append(1))
        x = M.ones(2, requires_grad=True)
        M.autograd.grad(lin(x).sum(), lin.weight)
        assert calls == []
        M.autograd.grad(lin(x).sum(), x)
        assert calls == [1]


def test_hook_fires_once_across_a_double_backward(torch):
    """The second backward reaches the inputs' node without passing the outputs: no call."""
    seen = {}
    for M in (E, torch):
        class Cube(M.nn.Module):
            def forward(self, x):
                return x * x * x
        calls = []
        cube = Cube()
        cube.register_full_backward_hook(lambda m, gi, go, calls=calls: calls.append((gi, go)))
        x = M.tensor([1., 2.], dtype=M.float64, requires_grad=True)
        g, = M.autograd.grad(cube(x).sum(), x, create_graph=True)
        g.sum().backward()
        seen[M.__name__.rpartition(".")[2]] = (calls, arr(x.grad))
    assert len(seen["refengine"][0]) == len(seen["torch"][0]) == 1
    assert_grads_equal(seen["refengine"][0][0][0], seen["torch"][0][0][0])
    np.testing.assert_allclose(seen["refengine"][1], seen["torch"][1])


def test_removed_hook_and_no_grad_do_not_fire():
    calls = []
    lin = nn.Linear(2, 1)
    handle = lin.register_full_backward_hook(lambda m, gi, go: calls.append(1))
    x = E.ones(2, requires_grad=True)
    with E.no_grad():
        assert lin(x).grad_fn is None
    handle.remove()
    lin(x).sum().backward()
    assert calls == []


def test_hook_order_global_first_then_prepend(torch):
    for M in (E, torch):
        order = []

        def hook(name, order=order):
            return lambda m, gi, go: order.append(name)
        lin = M.nn.Linear(2, 1)
        lin.register_full_backward_hook(hook("second"))
        lin.register_full_backward_hook(hook("first"), prepend=True)
        register_global = (M.nn.modules.module.register_module_full_backward_hook if M is torch
                           else nn.register_module_full_backward_hook)
        handle = register_global(hook("global"))
        try:
            lin(M.ones(2, requires_grad=True)).sum().backward()
        finally:
            handle.remove()
        assert order == ["global", "first", "second"]


def test_backward_pre_hook_can_replace_grad_output(torch):
    seen = {}
    for M in (E, torch):
        lin = M.nn.Linear(2, 1, dtype=M.float64)
        lin.register_full_backward_pre_hook(lambda m, go: (go[0] * 3,))
        x = M.ones(2, dtype=M.float64, requires_grad=True)
        lin(x).sum().backward()
        seen[M.__name__.rpartition(".")[2]] = (arr(x.grad) / arr(lin.weight).ravel(), arr(lin.weight.grad))
    np.testing.assert_allclose(seen["refengine"][0], [3., 3.])
    np.testing.assert_allclose(seen["refengine"][0], seen["torch"][0])
    np.testing.assert_allclose(seen["refengine"][1], seen["torch"][1])


def test_sequential_indexing_and_forward():
    a, b = nn.Linear(2, 3), nn.Linear(3, 1)
    seq = nn.Sequential(a, b)
    assert len(seq) == 2 and seq[0] is a and seq[-1] is b and list(seq) == [a, b]
    assert [n for n, _ in seq[1:].named_parameters()] == ["1.weight", "1.bias"]
    x = E.ones(4, 2)
    np.testing.assert_allclose(arr(seq(x)), arr(b(a(x))))
