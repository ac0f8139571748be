"""refengine.vmap's own semantics: in_dims, out_dims, nesting, errors, and
autograd through and inside it, checked against loops and against torch.vmap."""
from __future__ import annotations

import numpy as np
import pytest

import adcheck.refengine as E
from adcheck.refengine.autograd import forward_ad
from adcheck.refengine.batching import record_fallbacks

rng = np.random.default_rng(7)


def arr(*shape):
    return rng.standard_normal(shape)


def t(a, grad=False):
    return E.from_numpy(np.array(a)).requires_grad_(grad)


def test_in_dims_and_out_dims_move_the_batch():
    a, b = arr(3, 4), arr(4, 5)          # a batched along dim 1, b along dim 0
    f = lambda x, y: x.sin() * y.sum()   # noqa: E731
    got = E.vmap(f, in_dims=(1, 0), out_dims=1)(t(a), t(b))
    expected = np.stack([np.sin(a[:, k]) * b[k].sum() for k in range(4)], axis=1)
    assert got.shape == (3, 4)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-13)


def test_unbatched_arguments_are_shared_and_unbatched_outputs_are_expanded():
    x, w = arr(5, 3), arr(3)
    got_out, const = E.vmap(lambda x, w: (x * w, w.sum()), in_dims=(0, None))(t(x), t(w))
    np.testing.assert_allclose(got_out.numpy(), x * w, rtol=1e-14)
    np.testing.assert_allclose(const.numpy(), np.full(5, w.sum()), rtol=1e-14)


def test_nested_vmap_maps_two_dimensions():
    x = arr(2, 3, 4)
    got = E.vmap(E.vmap(lambda v: (v * v).sum()))(t(x))
    np.testing.assert_allclose(got.numpy(), (x * x).sum(-1), rtol=1e-13)


def test_bad_calls_raise_errors_that_name_the_fix():
    with pytest.raises(ValueError, match="same size in the mapped dimension"):
        E.vmap(E.add)(t(arr(3, 2)), t(arr(4, 2)))
    with pytest.raises(ValueError, match="at least one input"):
        E.vmap(E.sin, in_dims=(None,))(t(arr(3)))
    with pytest.raises(ValueError, match="in_dims must be an int or a tuple"):
        E.vmap(E.sin, in_dims=None)(t(arr(3)))   # (torch too refuses None at the top)
    with pytest.raises(ValueError, match="in_dims is not compatible"):
        E.vmap(E.add, in_dims=(0,))(t(arr(3)), t(arr(3)))
    with pytest.raises(RuntimeError, match="data-dependent control flow"):
        E.vmap(lambda x: x if x.sum() > 0 else -x)(t(arr(3, 2)))


def test_code_that_reads_values_falls_back_to_the_loop_only_inside_ops():
    # .item() is not an op: it reaches the user as an error naming the cause
    with pytest.raises(RuntimeError, match="item"):
        E.vmap(lambda x: x * x.sum().item())(t(arr(3, 2)))


def test_an_op_without_a_rule_runs_once_per_example_and_is_recorded():
    from adcheck.refengine.ops.opdef import OPS
    op = OPS["sin"]
    saved, op.batch = op.batch, None
    try:
        x = arr(4, 3)
        with record_fallbacks() as seen:
            got = E.vmap(E.sin)(t(x))
        assert seen == {"sin": 1}
        np.testing.assert_allclose(got.numpy(), np.sin(x), rtol=1e-15)
    finally:
        op.batch = saved


def test_gradients_flow_through_vmap_to_the_physical_inputs():
    x = t(arr(4, 3), grad=True)
    y = E.vmap(lambda r: (r.exp() * r).sum())(x)
    y.sum().backward()
    xa = x.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), np.exp(xa) * (1 + xa), rtol=1e-13)


def test_is_grads_batched_equals_one_backward_per_grad_output():
    x = t(arr(3, 4), grad=True)
    y = (x.tanh() * x).sum(0)                      # shape (4,)
    gos = t(arr(5, 4))
    batched, = E.autograd.grad(y, x, gos, is_grads_batched=True, retain_graph=True)
    for k in range(5):
        one, = E.autograd.grad(y, x, gos[k], retain_graph=True)
        np.testing.assert_allclose(batched[k].numpy(), one.numpy(), rtol=1e-13)


def test_grad_inside_vmap_gives_per_example_gradients():
    x = arr(4, 3)

    def per_example_grad(v):
        y = (v.sin() * v).sum()
        return E.autograd.grad(y, v, create_graph=True)[0]
    got = E.vmap(per_example_grad)(t(x, grad=True))
    np.testing.assert_allclose(got.detach().numpy(), np.sin(x) + x * np.cos(x), rtol=1e-13)


def test_vmap_over_forward_mode_tangents_gives_the_jacobian_columns():
    x = arr(3)
    primal = t(x)

    def jvp(tangent):
        with forward_ad.dual_level():
            out = (forward_ad.make_dual(primal, tangent) ** 3).cumsum(0)
            return forward_ad.unpack_dual(out).tangent
    columns = E.vmap(jvp)(t(np.eye(3)))
    jac = np.tril(np.ones((3, 3))) * 3 * x ** 2          # d cumsum(x^3) / dx
    np.testing.assert_allclose(columns.numpy().T, jac, rtol=1e-13)


def test_inplace_on_a_batched_tensor_writes_every_example():
    x = arr(4, 3)
    got = E.vmap(lambda r: r.clone().mul_(2).add_(1))(t(x))
    np.testing.assert_allclose(got.numpy(), 2 * x + 1, rtol=1e-15)
    with pytest.raises(RuntimeError, match="in-place op needs its self to be batched"):
        E.vmap(lambda r, w: w.add_(r), in_dims=(0, None))(t(arr(4, 3)), t(arr(3)))


@pytest.mark.parametrize("name, func, in_dims", [
    ("matmul", lambda a, b: a @ b, (0, None)),
    ("softmax-sum", lambda a, b: (a.softmax(-1) * b).sum(0), (0, 0)),
    ("reshape-transpose", lambda a, b: a.reshape(-1).unsqueeze(0) * b.sum(), (0, None)),
])
def test_vmap_agrees_with_torch_vmap(torch, name, func, in_dims):
    a, b = arr(5, 3, 4), arr(4, 2)
    b_mapped = b if in_dims[1] is None else arr(5, 3, 4)
    ours = E.vmap(func, in_dims=in_dims)(t(a), t(b_mapped))
    theirs = torch.vmap(func, in_dims=in_dims)(torch.from_numpy(a), torch.from_numpy(b_mapped))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


def test_a_batch_of_0d_examples_promotes_like_one_0d_tensor():
    # float32 tensor * float64 0-d tensor is float32; a batch of such 0-d
    # tensors is dimensioned, yet each example must still give float32
    weights = E.from_numpy(np.ones(3, dtype=np.float32))
    scales = t(np.arange(4.0))
    got = E.vmap(lambda s: weights * s)(scales)
    assert got.dtype == (weights * E.tensor(2.0, dtype=E.float64)).dtype == E.float32
    np.testing.assert_allclose(got.numpy(), np.outer(np.arange(4.0), np.ones(3)))


def test_named_tuple_results_keep_their_type():
    x = arr(2, 3, 4)
    got = E.vmap(lambda v: E.max(v, 1))(t(x))
    np.testing.assert_array_equal(got.values.numpy(), x.max(-1))
    np.testing.assert_array_equal(got.indices.numpy(), x.argmax(-1))


def test_named_tuple_arguments_are_mapped_leaf_by_leaf(torch):
    from collections import namedtuple
    Pair = namedtuple("Pair", "a b")
    a, b = arr(3, 2), arr(2, 3)             # a batched along dim 0, b along dim 1
    f = lambda p: p.a * p.b.sum(0)          # noqa: E731
    ours = E.vmap(f, in_dims=(Pair(0, 1),))(Pair(t(a), t(b)))
    theirs = torch.vmap(f, in_dims=(Pair(0, 1),))(Pair(torch.from_numpy(a),
                                                         torch.from_numpy(b)))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-14)
