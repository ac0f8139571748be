"""as_strided and the in-place view ops against torch: values, gradients and
tangents on windows that overlap, skip or leave part of the storage."""
from __future__ import annotations

import numpy as np
import pytest

import adcheck.refengine as E

torch = pytest.importorskip("torch", reason="the oracle of these tests is torch")

#: (base shape, a view of it as a function of the engine, as_strided arguments)
WINDOWS = [
    ((6,), lambda t: t, ((2, 2), (1, 1), 1)),                 # overlapping rows
    ((6,), lambda t: t, ((3,), (2,), None)),                  # every other element
    ((2, 3), lambda t: t, ((3, 2), (1, 3), 0)),               # the transpose
    ((2, 3), lambda t: t[:, 1:], ((2,), (3,), None)),         # a view's own offset
    ((4,), lambda t: t, ((0, 2), (1, 1), 0)),                 # empty
]


def _run(M, shape, view, args, seed):
    rng = np.random.default_rng(seed)
    base = rng.standard_normal(shape)
    cot = None
    x = M.tensor(base, dtype=M.float64, requires_grad=True)
    y = view(x * 1).as_strided(*args)
    cot = M.tensor(rng.standard_normal(tuple(y.shape)), dtype=M.float64)
    (g,) = M.autograd.grad(y, x, cot)
    fw = M.autograd.forward_ad
    with fw.dual_level():
        tangent = M.tensor(rng.standard_normal(shape), dtype=M.float64)
        dual = view(fw.make_dual(M.tensor(base, dtype=M.float64), tangent) * 1)
        tan = fw.unpack_dual(dual.as_strided(*args)).tangent
    return y.detach().numpy(), g.numpy(), None if tan is None else tan.numpy()


@pytest.mark.parametrize("shape, view, args", WINDOWS, ids=[str(w[2]) for w in WINDOWS])
def test_as_strided_matches_torch(shape, view, args):
    ours, theirs = _run(E, shape, view, args, 0), _run(torch, shape, view, args, 0)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=0, atol=0)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-15, atol=1e-15)
    if theirs[2] is not None:
        np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-15, atol=1e-15)


def test_as_strided_is_refused_on_a_base_that_is_not_contiguous():
    # the replays of the view would read the base's storage wrongly
    x = E.ones(3, 2, requires_grad=True)
    base = x.t() * 1          # an elementwise result keeps its input's layout, as in torch
    assert base.stride() == (1, 2) == (torch.ones(3, 2).t() * 1).stride()
    with pytest.raises(RuntimeError, match="call .contiguous\\(\\) or .clone\\(\\) first"):
        base.as_strided((2,), (1,))
    assert base.contiguous().as_strided((2,), (1,)).requires_grad
    with E.no_grad():
        assert base.as_strided((2,), (1,)).tolist() == [1.0, 1.0]   # not recorded: allowed


def test_view_made_before_as_strided_on_its_base_is_refused_at_backward():
    x = E.arange(6.0, requires_grad=True)
    c = x * 1
    b = c[1:3]
    c.as_strided_((2, 2), (1, 1), 1)
    (b * 2).sum().backward()                  # b's history is unchanged: right
    assert x.grad.tolist() == [0.0, 2.0, 2.0, 0.0, 0.0, 0.0]
    b.mul_(10)
    with pytest.raises(RuntimeError, match="cannot be read from the base any more"):
        (c * 1).sum().backward()


@pytest.mark.parametrize("op", ["t_", "transpose_", "squeeze_", "unsqueeze_"])
def test_inplace_view_op_under_vmap_equals_the_loop(op):
    calls = {"t_": lambda t: t.t_(), "transpose_": lambda t: t.transpose_(0, 1),
             "squeeze_": lambda t: t.squeeze_(1), "unsqueeze_": lambda t: t.unsqueeze_(0)}
    call = calls[op]
    x = E.tensor(np.random.default_rng(1).standard_normal((4, 2, 1 if op == "squeeze_" else 3)))

    def f(row):
        y = row * 2
        call(y)
        return y * E.arange(float(y.numel())).reshape(tuple(y.shape))
    batched = E.vmap(f)(x)
    looped = E.stack([f(x[i]) for i in range(4)])
    assert batched.tolist() == looped.tolist()
