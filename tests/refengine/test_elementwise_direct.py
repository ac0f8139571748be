"""An elementwise op under vmap by the direct path (``batching/runtime.py``'s
``_elementwise_direct``) against torch.vmap, and against refengine's general
path (``BatchCall`` and the ``elementwise`` rule) run on the same call with
the direct path switched off: the same values, dtypes, shapes and strides.
Also the lighter bookkeeping of a recorded op (``OpNode.create``, a saved
tensor's description, a rule's arguments) seen from outside, against torch."""
from __future__ import annotations

import numpy as np
import pytest

import adcheck.refengine as E
from adcheck.refengine.batching import runtime

RNG = np.random.default_rng(34)
X = RNG.standard_normal((4, 3, 2))          # a batch of 4 (3, 2) examples
Y2 = RNG.standard_normal((4, 2))             # a batch of 4 (2,) examples
W = RNG.standard_normal((3, 2))              # unbatched
V = RNG.standard_normal(4)                   # a batch of 4 0-d examples

# (name, function of the module, arguments, in_dims); each mixes argument kinds
CASES = [
    ("both batched, same rank", lambda M, x, y: M.mul(x, y), (X, X[::-1].copy()), (0, 0)),
    ("batched and unbatched", lambda M, x, w: M.sub(x, w), (X, W), (0, None)),
    ("lower rank batched (padded)", lambda M, y, w: M.div(y, w), (Y2, W), (0, None)),
    ("two ranks batched", lambda M, x, y: M.maximum(x, y), (X, Y2), (0, 0)),
    ("a number and alpha", lambda M, x, y: M.add(x * 2.5, y, alpha=3), (X, Y2), (0, 0)),
    ("unary", lambda M, x: M.exp(x).sin(), (X,), (0,)),
    ("three tensors", lambda M, c, x, w: M.where(c > 0, x, w), (X, X * 2, W), (0, 0, None)),
    ("batch not first", lambda M, x, w: M.mul(x, w), (X, X[:, 0, :].copy()), (1, None)),
]


def _vmap(M, func, args, in_dims, dtypes=None):
    tensors = [M.tensor(a) if dtypes is None else M.tensor(a, dtype=getattr(M, d))
               for a, d in zip(args, dtypes or [None] * len(args))]
    return M.vmap(lambda *a: func(M, *a), in_dims=in_dims)(*tensors)


def _general_path(monkeypatch):
    monkeypatch.setattr(runtime, "_elementwise_direct", lambda op, env: None)


def _same_tensor(ours, ref):
    assert ours.dtype == ref.dtype and tuple(ours.shape) == tuple(ref.shape)
    np.testing.assert_array_equal(ours.numpy(), ref.numpy())


@pytest.mark.parametrize("name, func, args, in_dims", CASES, ids=[c[0] for c in CASES])
def test_direct_path_as_torch_and_as_the_rule(torch, monkeypatch, name, func, args, in_dims):
    direct = _vmap(E, func, args, in_dims)
    theirs = _vmap(torch, func, args, in_dims)
    assert str(direct.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert tuple(direct.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(direct.numpy(), theirs.numpy(), rtol=1e-14, atol=0)
    _general_path(monkeypatch)
    general = _vmap(E, func, args, in_dims)
    _same_tensor(direct, general)
    assert direct.numpy().strides == general.numpy().strides


def test_direct_path_is_taken_for_the_plain_case(monkeypatch):
    taken = []
    original = runtime._elementwise_direct

    def spy(op, env):
        result = original(op, env)
        taken.append((op.name, result is not None))
        return result
    monkeypatch.setattr(runtime, "_elementwise_direct", spy)
    _vmap(E, lambda M, x, w: M.mul(x, w), (X, W), (0, None))
    assert taken == [("mul", True)]


@pytest.mark.parametrize("first, second, expected", [
    ("float64", "float32", "float32"),      # a 0-d example promotes weakly: float32
    ("float32", "float64", "float64"),
])
def test_zero_dim_examples_keep_their_promotion(torch, first, second, expected):
    # the direct path leaves a batched 0-d example to the rule, which casts it
    args, dtypes = (V, W), (first, second)
    ours = _vmap(E, lambda M, v, w: v * w, args, (0, None), dtypes)
    theirs = _vmap(torch, lambda M, v, w: v * w, args, (0, None), dtypes)
    assert str(ours.dtype) == f"refengine.{expected}" and str(theirs.dtype) == f"torch.{expected}"
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_nested_vmap_as_torch(torch):
    def program(M):
        inner = M.vmap(lambda x, w: M.mul(x, w) + 1.0, in_dims=(0, None))
        return M.vmap(inner, in_dims=(0, 0))(M.tensor(X), M.tensor(X[:, 0, :].copy()))
    ours, theirs = program(E), program(torch)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-14, atol=0)


@pytest.mark.parametrize("op", ["mul", "div", "exp", "atan2", "pow"])
def test_batched_backward_as_torch(torch, op):
    rows = RNG.standard_normal((5, 3, 2))

    def grads(M):
        x = M.tensor(np.abs(X[0]) + 0.5, requires_grad=True)
        y = M.tensor(W, requires_grad=True)
        out = M.exp(x) if op == "exp" else getattr(M, op)(x, y)
        ins = (x,) if op == "exp" else (x, y)
        return M.autograd.grad(out, ins, M.tensor(rows), is_grads_batched=True)
    for ours, theirs in zip(grads(E), grads(torch)):
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("dtype, described", [("float64", "{}.DoubleTensor [2]"),
                                              ("complex128", "CPUComplexDoubleType [2]")])
def test_modified_saved_tensor_is_described_as_torch(torch, dtype, described):
    # the saved tensor's dtype is kept as NumPy's and named only in this message
    def message(M):
        x = M.ones(2, dtype=getattr(M, dtype), requires_grad=True)
        y = (x * 1).exp()           # exp saves its result
        y.add_(1)
        with pytest.raises(RuntimeError) as caught:
            M.autograd.grad(y.abs().sum(), x)
        text = str(caught.value)
        return text[text.index("operation: ["):text.index("], which is output 0 of")]
    assert message(torch) == "operation: [" + described.format("torch")
    assert message(E) == "operation: [" + described.format("refengine")


def test_node_of_a_recorded_op_as_torch(torch):
    def node(M):
        x = M.tensor(W, requires_grad=True)
        y = M.tensor(W[0], requires_grad=True)
        out = (x * y).sum()
        mul = out.grad_fn.next_functions[0][0]
        return mul.name(), len(mul.next_functions), mul._saved_self.shape
    ours, theirs = node(E), node(torch)
    assert ours[:2] == theirs[:2] and tuple(ours[2]) == tuple(theirs[2])
