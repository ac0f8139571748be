"""Storage and views, the dynamic graph, and the backward engine.

Expectations come from torch (the same program run on both modules) or from
calculus written out in the test.
"""
from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

import adcheck.refengine as E

try:
    import torch as _torch
except ImportError:  # the oracle is optional: tests that need it skip
    _torch = None




grad = E.autograd.grad


def arr(t) -> np.ndarray:
    t = t.detach()
    if hasattr(t, "resolve_conj"):   # torch may hand back a lazily conjugated tensor
        t = t.resolve_conj()
    return np.asarray(t.numpy())


def close(ours, expected, tol: float = 1e-5) -> None:
    expected = arr(expected) if hasattr(expected, "detach") else np.asarray(expected)
    np.testing.assert_allclose(arr(ours), expected, rtol=tol, atol=tol)


# ----- storage shared by a base and its views ---------------------------------

VIEWS = {
    "view": lambda x: x.view(6),
    "view_infer": lambda x: x.view(3, -1),
    "reshape_contiguous": lambda x: x.reshape(3, 2),
    "transpose": lambda x: x.transpose(0, 1),
    "t": lambda x: x.t(),
    "permute": lambda x: x.permute(1, 0),
    "expand": lambda x: x[:1].expand(4, 3),
    "unsqueeze": lambda x: x.unsqueeze(1),
    "squeeze": lambda x: x[:1].squeeze(0),
    "select": lambda x: x.select(1, 2),
    "narrow": lambda x: x.narrow(1, 1, 2),
    "index_int": lambda x: x[1],
    "index_slice": lambda x: x[:, 1:],
    "index_step": lambda x: x[:, ::2],
    "index_none": lambda x: x[None],
    "index_ellipsis": lambda x: x[..., 0],
    "view_of_view": lambda x: x.t()[1],
}


def _base_x(M):
    return M.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])


@pytest.mark.parametrize("name", list(VIEWS))
def test_view_is_a_view_of_the_base_as_torch_reports(torch, name):
    make = VIEWS[name]
    tx = _base_x(torch)
    tv = make(tx)
    assert tv._is_view() and tv._base is tx, "the oracle disagrees with the test's premise"
    x = _base_x(E)
    v = make(x)
    assert v._is_view() is True
    assert v._base is x
    assert x._is_view() is False and x._base is None
    close(v, tv)
    # the view starts where torch's does in the base's memory
    assert v.data_ptr() - x.data_ptr() == tv.data_ptr() - tx.data_ptr()


@pytest.mark.parametrize("name", list(VIEWS))
def test_write_to_the_base_is_seen_by_the_view_through_one_counter(torch, name):
    tx = _base_x(torch)
    tv = VIEWS[name](tx)
    tx.add_(10)
    x = _base_x(E)
    v = VIEWS[name](x)
    x.add_(10)
    close(v, tv)
    assert v._version == x._version == tv._version == tx._version == 1


WRITABLE_VIEWS = [name for name in VIEWS if name != "expand"]


@pytest.mark.parametrize("name", WRITABLE_VIEWS)
def test_write_through_the_view_is_seen_by_the_base_through_one_counter(torch, name):
    tx = _base_x(torch)
    tv = VIEWS[name](tx)
    tv.mul_(-1)
    x = _base_x(E)
    v = VIEWS[name](x)
    v.mul_(-1)
    close(x, tx)
    close(v, tv)
    assert x._version == v._version == tx._version == tv._version == 1


def test_write_through_an_expanded_view_raises(torch):
    # several elements of an expanded view share one memory location
    with pytest.raises(RuntimeError, match="single memory location"):
        torch.ones(1, 3).expand(4, 3).mul_(0)
    with pytest.raises(RuntimeError, match="single memory location"):
        E.ones(1, 3).expand(4, 3).mul_(0)


def test_write_through_a_view_is_seen_by_the_base():
    x = E.zeros(2, 3)
    x[1].fill_(5.0)
    x.t()[0, 0] = 7.0
    assert x.tolist() == [[7.0, 0.0, 0.0], [5.0, 5.0, 5.0]]


def test_reshape_copies_when_no_view_is_possible(torch):
    tx = _base_x(torch)
    assert tx.t().reshape(6)._is_view() is False
    x = _base_x(E)
    r = x.t().reshape(6)
    assert r._is_view() is False and r._base is None
    assert r.tolist() == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    r.fill_(9.0)
    assert x.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


@pytest.mark.parametrize("index", [[0, 1], "mask"], ids=["advanced", "mask"])
def test_advanced_indexing_copies(torch, index):
    tx = torch.arange(4.0)
    tidx = torch.tensor([True, False, True, False]) if index == "mask" else index
    assert tx[tidx]._is_view() is False
    x = E.arange(4.0)
    idx = E.tensor([True, False, True, False]) if index == "mask" else index
    y = x[idx]
    assert y._is_view() is False
    close(y, tx[tidx])
    y.fill_(-1.0)
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_detach_shares_the_version_counter_and_data_does_not(torch):
    t = torch.ones(2)
    d = t.detach()
    d.add_(1)
    assert t._version == 1
    x = E.ones(2)
    x.detach().add_(1)
    assert x._version == 1 and x.tolist() == [2.0, 2.0]
    x.data.add_(1)
    assert x._version == 1 and x.tolist() == [3.0, 3.0]


def test_clone_does_not_share_memory():
    x = E.ones(3)
    c = x.clone()
    c.zero_()
    assert x.tolist() == [1.0, 1.0, 1.0] and c._is_view() is False


# ----- the dynamic graph: grad_fn names -----------------------------------------

GRAD_FNS = {
    "add": lambda M, x, y: x + y,
    "add_number": lambda M, x, y: x + 2,
    "sub": lambda M, x, y: x - y,
    "rsub": lambda M, x, y: 2 - x,
    "mul": lambda M, x, y: x * y,
    "mul_number": lambda M, x, y: x * 2,
    "div": lambda M, x, y: x / y,
    "neg": lambda M, x, y: -x,
    "pow_number": lambda M, x, y: x ** 2,
    "pow_tensor": lambda M, x, y: x ** y,
    "rpow": lambda M, x, y: 2 ** x,
    "exp": lambda M, x, y: x.exp(),
    "log": lambda M, x, y: x.log(),
    "sin": lambda M, x, y: M.sin(x),
    "tanh": lambda M, x, y: x.tanh(),
    "sigmoid": lambda M, x, y: x.sigmoid(),
    "abs": lambda M, x, y: x.abs(),
    "relu": lambda M, x, y: x.relu(),
    "sqrt": lambda M, x, y: x.sqrt(),
    "sum": lambda M, x, y: x.sum(),
    "sum_dim": lambda M, x, y: x.sum(0),
    "mean": lambda M, x, y: x.mean(),
    "mean_dim": lambda M, x, y: x.mean(1),
    "prod": lambda M, x, y: x.prod(),
    "amax": lambda M, x, y: x.amax(),
    "max": lambda M, x, y: x.max(),
    "max_dim": lambda M, x, y: x.max(1).values,
    "view": lambda M, x, y: x.view(6),
    "reshape": lambda M, x, y: x.reshape(3, 2),
    "reshape_copy": lambda M, x, y: x.t().reshape(6),
    "t": lambda M, x, y: x.t(),
    "transpose": lambda M, x, y: x.transpose(0, 1),
    "permute": lambda M, x, y: x.permute(1, 0),
    "expand": lambda M, x, y: x[:1].expand(3, 3),
    "unsqueeze": lambda M, x, y: x.unsqueeze(0),
    "squeeze": lambda M, x, y: x.unsqueeze(0).squeeze(),
    "squeeze_dim": lambda M, x, y: x.unsqueeze(0).squeeze(0),
    "select": lambda M, x, y: x[0],
    "slice": lambda M, x, y: x[:, 1:],
    "narrow": lambda M, x, y: x.narrow(0, 1, 1),
    "index": lambda M, x, y: x[[0, 1, 0]],
    "diagonal": lambda M, x, y: x.diagonal(),
    "clone": lambda M, x, y: x.clone(),
    "to_float64": lambda M, x, y: x.to(M.float64),
    "mm": lambda M, x, y: x @ y.t(),
    "matmul_vec": lambda M, x, y: x @ y[0],
    "cat": lambda M, x, y: M.cat([x, y]),
    "stack": lambda M, x, y: M.stack([x, y]),
    "where": lambda M, x, y: M.where(x > 0.5, x, y),
    "clamp": lambda M, x, y: x.clamp(0.2, 0.8),
    "maximum": lambda M, x, y: M.maximum(x, y),
    "cumsum": lambda M, x, y: x.cumsum(0),
}


def _leaves(M):
    x = M.tensor([[0.3, 0.6, 0.9], [0.2, 0.4, 0.7]], requires_grad=True)
    y = M.tensor([[0.5, 1.5, 2.5], [1.0, 2.0, 3.0]], requires_grad=True)
    return x, y


@pytest.mark.parametrize("name", list(GRAD_FNS))
def test_grad_fn_is_named_as_in_torch(torch, name):
    expected = GRAD_FNS[name](torch, *_leaves(torch)).grad_fn.name()
    assert GRAD_FNS[name](E, *_leaves(E)).grad_fn.name() == expected


def _structure(fn, name):
    """The graph below ``fn`` as nested (name, children with their input numbers)."""
    if fn is None:
        return None
    return (name(fn), tuple((_structure(child, name), nr) for child, nr in fn.next_functions))


def ours_name(fn) -> str:
    return fn.name()


def torch_name(fn) -> str:
    # torch's AccumulateGrad.name() is "torch::autograd::AccumulateGrad"; its type is named
    # as the node in every other place (the brief and the seed call it AccumulateGrad)
    return type(fn).__name__


def _square_plus_self(s):
    return s * s + s


GRAPHS = {
    "mul_leaf_and_constant": lambda M, x, y, c: (x * c).sum(),
    "chain": lambda M, x, y, c: ((x * y).exp() + x).mean(),
    "shared_subexpression": lambda M, x, y, c: _square_plus_self(x.sin()),
    "view_chain": lambda M, x, y, c: x.t().unsqueeze(0) * c.t(),
    "multi_output": lambda M, x, y, c: x.max(1).values + y.sum(1),
    "constant_on_left": lambda M, x, y, c: c - y,
}


def _graph_inputs(M):
    x, y = _leaves(M)
    return x, y, M.tensor([[2.0, 3.0, 4.0], [5.0, 6.0, 7.0]])


@pytest.mark.parametrize("name", list(GRAPHS))
def test_next_functions_structure_matches_torch(torch, name):
    tx, ty, tc = _graph_inputs(torch)
    x, y, c = _graph_inputs(E)
    assert _structure(GRAPHS[name](E, x, y, c).grad_fn, ours_name) == \
        _structure(GRAPHS[name](torch, tx, ty, tc).grad_fn, torch_name)


def test_leaf_edges_lead_to_its_one_accumulate_grad(torch):
    x = E.tensor([1.0, 2.0], requires_grad=True)
    a, b = (x * 2).grad_fn, (x + 1).grad_fn
    (acc, nr), = a.next_functions[:1]
    assert acc.name() == "AccumulateGrad" and nr == 0
    assert acc.variable is x
    assert b.next_functions[0][0] is acc
    t = torch.tensor([1.0, 2.0], requires_grad=True)
    assert (t * 2).grad_fn.next_functions[0][0].variable is t


def test_input_that_does_not_require_grad_has_a_none_edge(torch):
    theirs = (torch.ones(2, requires_grad=True) * torch.ones(2)).grad_fn.next_functions
    ours = (E.ones(2, requires_grad=True) * E.ones(2)).grad_fn.next_functions
    assert theirs[1] == (None, 0)
    assert ours[1] == (None, 0)


def test_output_nr_of_multi_output_op(torch):
    tv, ti = torch.tensor([[1.0, 3.0], [2.0, 0.0]], requires_grad=True).max(1)
    v, i = E.tensor([[1.0, 3.0], [2.0, 0.0]], requires_grad=True).max(1)
    assert v.output_nr == tv.output_nr == 0
    assert i.requires_grad is ti.requires_grad is False
    assert i.grad_fn is None and ti.grad_fn is None


# ----- is_leaf and requires_grad propagation ---------------------------------------

def test_is_leaf_and_requires_grad_propagation(torch):
    def observe(M):
        a = M.tensor([1.0, 2.0], requires_grad=True)
        b = M.tensor([3.0, 4.0])
        results = {"a": a, "b": b, "a*b": a * b, "b*b": b * b, "b+1": b + 1,
                   "a.detach()": a.detach(), "(a*b).detach()": (a * b).detach(),
                   "a[0]": a[0], "b[0]": b[0], "a>1": a > 1, "a.sum()": a.sum(),
                   "b.requires_grad_()": M.ones(2).requires_grad_()}
        return {k: (v.is_leaf, v.requires_grad, v.grad_fn is None) for k, v in results.items()}
    assert observe(E) == observe(torch)


def test_requires_grad_cannot_be_turned_off_on_a_non_leaf(torch):
    with pytest.raises(RuntimeError, match="leaf"):
        (torch.ones(1, requires_grad=True) * 2).requires_grad_(False)
    with pytest.raises(RuntimeError, match="leaf"):
        (E.ones(1, requires_grad=True) * 2).requires_grad_(False)


def test_requires_grad_setter_on_a_leaf():
    x = E.ones(2)
    x.requires_grad = True
    assert x.requires_grad and x.is_leaf
    x.requires_grad_(False)
    assert not x.requires_grad


# ----- retain_grad -------------------------------------------------------------

def test_retain_grad_fills_grad_of_a_non_leaf(torch):
    def run(M):
        x = M.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * x
        y.retain_grad()
        z = y.sin().sum()
        z.backward()
        return y.retains_grad, arr(y.grad), arr(x.grad)
    theirs, ours = run(torch), run(E)
    assert ours[0] is theirs[0] is True
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6)
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-6)


def test_grad_of_a_non_leaf_without_retain_grad_is_none_with_a_warning(torch):
    def run(M):
        x = M.ones(2, requires_grad=True)
        y = x * 2
        y.sum().backward()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            g = y.grad
        return g, [w.category for w in caught]
    theirs, ours = run(torch), run(E)
    assert ours[0] is None and theirs[0] is None
    assert theirs[1] == [UserWarning]
    assert ours[1] == [UserWarning]


def test_retain_grad_on_a_leaf_changes_nothing():
    x = E.ones(2, requires_grad=True)
    x.retain_grad()
    (x * 3).sum().backward()
    close(x.grad, [3.0, 3.0])


# ----- the backward engine ---------------------------------------------------

def test_backward_of_a_scalar_gives_the_gradient():
    x = E.tensor([1.0, -2.0, 3.0], requires_grad=True)
    (x ** 3).sum().backward()
    close(x.grad, 3 * np.array([1.0, -2.0, 3.0]) ** 2)


def test_backward_with_a_gradient_is_a_vector_jacobian_product():
    x = E.tensor([1.0, 2.0], requires_grad=True)
    v = E.tensor([0.5, -1.0])
    (x * x).backward(v)
    close(x.grad, [0.5 * 2 * 1.0, -1.0 * 2 * 2.0])


def test_implicit_gradient_only_for_scalar_outputs(torch):
    with pytest.raises(RuntimeError, match="implicitly created only for scalar outputs"):
        (torch.ones(2, requires_grad=True) * 2).backward()
    with pytest.raises(RuntimeError, match="implicitly created only for scalar outputs"):
        (E.ones(2, requires_grad=True) * 2).backward()


def test_implicit_gradient_refused_for_a_complex_scalar(torch):
    with pytest.raises(RuntimeError, match="real scalar outputs"):
        (torch.ones(1, dtype=torch.complex64, requires_grad=True) * 2).sum().backward()
    with pytest.raises(RuntimeError, match="real scalar outputs"):
        (E.ones(1, dtype=E.complex64, requires_grad=True) * 2).sum().backward()


def test_one_element_non_scalar_output_gets_an_implicit_gradient(torch):
    def run(M):
        x = M.tensor([3.0], requires_grad=True)
        (x * x).backward()
        return arr(x.grad)
    np.testing.assert_allclose(run(E), run(torch))


def test_gradients_accumulate_across_two_backwards():
    x = E.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    first = x.grad
    (x * 3).sum().backward()
    close(x.grad, [2.0 + 3.0, 4.0 + 3.0])
    assert x.grad is first     # accumulated in place, as PyTorch does without create_graph


def test_grad_can_be_reset_to_none_and_assigned():
    x = E.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    x.grad = None
    (x * 5).sum().backward()
    close(x.grad, [5.0, 5.0])
    x.grad = E.zeros(2)
    close(x.grad, [0.0, 0.0])


def test_assigned_grad_must_match_shape_and_dtype(torch):
    for M in (torch, E):
        x = M.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError):
            x.grad = M.ones(3)
        with pytest.raises(RuntimeError):
            x.grad = M.ones(2, dtype=M.float64)


def test_broadcast_gradients_are_summed_back_to_each_input(torch):
    def run(M):
        a = M.tensor([[1.0], [2.0], [3.0]], requires_grad=True)          # (3, 1)
        b = M.tensor([0.5, -1.0, 2.0, 4.0], requires_grad=True)          # (4,)
        c = M.tensor(1.5, requires_grad=True)                            # ()
        (a * b * c + b).sum().backward()
        return [arr(t.grad) for t in (a, b, c)]
    for ours, theirs in zip(run(E), run(torch)):
        assert ours.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_each_gradient_has_the_dtype_of_its_input(torch):
    def run(M):
        a = M.tensor([1.0, 2.0], requires_grad=True)
        b = M.tensor([3.0, 4.0], dtype=M.float64, requires_grad=True)
        z = M.tensor([1 + 1j, 2j], requires_grad=True)
        ((a * b).sum() + (z * a).abs().sum()).backward()
        return [(repr(t.grad.dtype).split(".")[-1], arr(t.grad)) for t in (a, b, z)]
    for (ours_dtype, ours), (their_dtype, theirs) in zip(run(E), run(torch)):
        assert ours_dtype == their_dtype
        np.testing.assert_allclose(ours, theirs, rtol=1e-5)


def test_complex_gradient_is_projected_to_real_for_a_real_input(torch):
    def run(M):
        x = M.tensor([1.0, -2.0], requires_grad=True)
        w = M.tensor([1 + 2j, 0.5 - 1j])
        (x * w).abs().sum().backward()
        return x.grad
    ours, theirs = run(E), run(torch)
    assert ours.dtype is E.float32
    close(ours, theirs)
    # by hand: |x w| = |x| |w|, so the derivative is sign(x) |w|
    close(ours, np.sign([1.0, -2.0]) * np.abs([1 + 2j, 0.5 - 1j]))


def test_second_backward_raises_after_saved_tensors_are_freed(torch):
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y = (torch.ones(2, requires_grad=True) * torch.ones(2, requires_grad=True)).sum()
        y.backward()
        y.backward()
    x = E.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_saved_tensor_access_after_backward_raises(torch):
    t = torch.ones(2, requires_grad=True)
    ty = t.exp()
    ty.sum().backward()
    with pytest.raises(RuntimeError, match="after they have already been freed"):
        _ = ty.grad_fn._saved_result
    x = E.ones(2, requires_grad=True)
    y = x.exp()
    y.sum().backward()
    with pytest.raises(RuntimeError, match="after they have already been freed"):
        _ = y.grad_fn._saved_result


def test_saved_tensor_modified_in_place_raises_at_backward(torch):
    message = "modified by an inplace operation"
    t = torch.ones(2, requires_grad=True)
    tb = (t * 1).exp()
    tb.add_(1)
    with pytest.raises(RuntimeError, match=message):
        tb.sum().backward()
    x = E.ones(2, requires_grad=True)
    b = (x * 1).exp()            # exp saves its result
    b.add_(1)
    with pytest.raises(RuntimeError, match=message):
        b.sum().backward()


def test_retain_graph_allows_a_second_backward():
    x = E.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    close(x.grad, [4.0, 8.0])


def test_graph_without_saved_tensors_can_be_walked_twice(torch):
    # PyTorch only raises when a freed saved tensor is needed: x + 1 saves none
    def run(M):
        x = M.tensor([1.0, 2.0], requires_grad=True)
        y = (x + 1).sum()
        y.backward()
        y.backward()
        return arr(x.grad)
    np.testing.assert_allclose(run(E), run(torch))


def test_backward_inputs_restricts_accumulation(torch):
    def run(M):
        x = M.tensor([1.0, 2.0], requires_grad=True)
        y = M.tensor([3.0, 4.0], requires_grad=True)
        (x * y).sum().backward(inputs=[x])
        return arr(x.grad), y.grad
    (ours_x, ours_y), (theirs_x, theirs_y) = run(E), run(torch)
    np.testing.assert_allclose(ours_x, theirs_x)
    assert ours_y is None and theirs_y is None


def test_backward_inputs_can_name_a_non_leaf(torch):
    def run(M):
        x = M.tensor([1.0, 2.0], requires_grad=True)
        h = x * x
        (h * 3).sum().backward(inputs=[h])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            h_grad = h.grad                 # populated: torch does not warn
        return arr(h_grad), x.grad, [w.category for w in caught]
    (ours_h, ours_x, ours_warn), (theirs_h, theirs_x, theirs_warn) = run(E), run(torch)
    np.testing.assert_allclose(ours_h, theirs_h)
    assert ours_x is None and theirs_x is None
    assert ours_warn == theirs_warn


def test_autograd_backward_with_several_tensors():
    x = E.tensor([1.0, 2.0], requires_grad=True)
    a, b = x * 2, x * x
    E.autograd.backward([a, b], [E.ones(2), E.tensor([1.0, 10.0])])
    close(x.grad, [2.0 + 2.0, 2.0 + 40.0])


def test_autograd_backward_with_inputs(torch):
    def run(M):
        x = M.tensor([1.0, 2.0], requires_grad=True)
        y = M.tensor([3.0, 4.0], requires_grad=True)
        M.autograd.backward((x * y).sum(), inputs=[y])
        return x.grad, arr(y.grad)
    (ours_x, ours_y), (their_x, their_y) = run(E), run(torch)
    assert ours_x is None and their_x is None
    np.testing.assert_allclose(ours_y, their_y)


def test_backward_with_empty_inputs_is_refused(torch):
    message = "inputs.? argument to .?backward\\(\\).? cannot be empty"
    with pytest.raises(RuntimeError, match=message):
        (torch.ones(1, requires_grad=True) * 2).sum().backward(inputs=[])
    with pytest.raises(RuntimeError, match=message):
        (E.ones(1, requires_grad=True) * 2).sum().backward(inputs=[])


def test_backward_on_a_tensor_that_does_not_require_grad(torch):
    with pytest.raises(RuntimeError, match="does not require grad"):
        torch.ones(2).sum().backward()
    with pytest.raises(RuntimeError, match="does not require grad"):
        E.ones(2).sum().backward()


def test_gradient_shape_mismatch_raises(torch):
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (torch.ones(2, requires_grad=True) * 2).backward(torch.ones(3))
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (E.ones(2, requires_grad=True) * 2).backward(E.ones(3))


# ----- autograd.grad -----------------------------------------------------------

def test_grad_returns_a_tuple_and_leaves_dot_grad_alone():
    x = E.tensor([1.0, 2.0], requires_grad=True)
    result = grad((x * x).sum(), x)
    assert isinstance(result, tuple) and len(result) == 1
    close(result[0], [2.0, 4.0])
    assert x.grad is None


def test_grad_with_grad_outputs_and_several_inputs():
    x = E.tensor([1.0, 2.0], requires_grad=True)
    y = E.tensor([3.0, 5.0], requires_grad=True)
    gx, gy = grad([x * y], [x, y], grad_outputs=[E.tensor([1.0, -1.0])])
    close(gx, [3.0, -5.0])
    close(gy, [1.0, -2.0])


def test_grad_unused_input_raises_unless_allow_unused(torch):
    with pytest.raises(RuntimeError, match="not have been used in the graph"):
        t = torch.ones(2, requires_grad=True)
        torch.autograd.grad((t * 2).sum(), [t, torch.ones(2, requires_grad=True)])
    x, unused = E.ones(2, requires_grad=True), E.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="not have been used in the graph"):
        grad((x * 2).sum(), [x, unused])
    gx, gu = grad((x * 2).sum(), [x, unused], allow_unused=True)
    close(gx, [2.0, 2.0])
    assert gu is None


def test_grad_materialize_grads_gives_zeros_for_unused(torch):
    t, tu = torch.ones(2, requires_grad=True), torch.ones(3, requires_grad=True)
    expected = torch.autograd.grad((t * 2).sum(), [t, tu], materialize_grads=True)[1]
    x, unused = E.ones(2, requires_grad=True), E.ones(3, requires_grad=True)
    gx, gu = grad((x * 2).sum(), [x, unused], materialize_grads=True)
    close(gx, [2.0, 2.0])
    close(gu, expected)
    assert tuple(gu.shape) == (3,)


def test_materialize_grads_with_allow_unused_false_is_refused(torch):
    t = torch.ones(2, requires_grad=True)
    with pytest.raises(ValueError):
        torch.autograd.grad(t.sum(), t, allow_unused=False, materialize_grads=True)
    x = E.ones(2, requires_grad=True)
    with pytest.raises(ValueError):
        grad(x.sum(), x, allow_unused=False, materialize_grads=True)


def test_is_grads_batched_gives_the_jacobian_rows():
    x = E.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x
    jac, = grad(y, x, grad_outputs=E.eye(3), is_grads_batched=True)
    close(jac, np.diag([2.0, 4.0, 6.0]))


def test_is_grads_batched_matches_torch_on_a_matrix_function(torch):
    def run(M):
        w = M.tensor([[1.0, 2.0], [3.0, -1.0], [0.5, 0.5]])
        x = M.tensor([0.3, -0.7], requires_grad=True)
        v = M.tensor([[1.0, 0.0, 2.0], [0.0, 1.0, -1.0]])
        return arr(M.autograd.grad((w @ x).tanh(), x, grad_outputs=v, is_grads_batched=True)[0])
    np.testing.assert_allclose(run(E), run(torch), rtol=1e-5)


def test_grad_does_not_free_the_graph_with_retain_graph():
    x = E.tensor([2.0], requires_grad=True)
    y = (x ** 3).sum()
    first, = grad(y, x, retain_graph=True)
    second, = grad(y, x)
    close(first, [12.0])
    close(second, [12.0])
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        grad(y, x)


def test_grad_with_respect_to_an_intermediate_tensor():
    x = E.tensor([1.0, 2.0], requires_grad=True)
    h = x * x
    gh, = grad((h * E.tensor([3.0, 5.0])).sum(), h)
    close(gh, [3.0, 5.0])
    assert x.grad is None


def test_grad_of_several_outputs_sums_their_contributions():
    x = E.tensor([1.0, 2.0], requires_grad=True)
    gx, = grad([(x * x).sum(), (x * 3).sum()], x)
    close(gx, [2.0 + 3.0, 4.0 + 3.0])


def test_complex_grad_output_for_a_real_output_is_refused(torch):
    message = "both grad_output and output are required to have the same dtype"
    t = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=message):
        torch.autograd.grad(t * 2, t, grad_outputs=torch.ones(2, dtype=torch.complex64))
    x = E.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=message):
        grad(x * 2, x, grad_outputs=E.ones(2, dtype=E.complex64))


def test_create_graph_keeps_the_graph_unless_retain_graph_is_false():
    x = E.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    grad(y, x, create_graph=True)
    close(grad(y, x, create_graph=True, retain_graph=False)[0], [2.0, 4.0])
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        grad(y, x)


def test_retained_grad_accumulates_across_backwards():
    x = E.ones(2, requires_grad=True)
    y = x * 2
    y.retain_grad()
    z = (y * 3).sum()
    z.backward(retain_graph=True)
    z.backward()
    close(y.grad, [6.0, 6.0])
    close(x.grad, [12.0, 12.0])


def test_higher_order_gradients_through_create_graph():
    x = E.tensor([1.5, -0.5], requires_grad=True)
    y = (x ** 4).sum()
    g1, = grad(y, x, create_graph=True)
    assert g1.requires_grad
    g2, = grad(g1.sum(), x, create_graph=True)
    g3, = grad(g2.sum(), x)
    v = np.array([1.5, -0.5])
    close(g1, 4 * v ** 3)
    close(g2, 12 * v ** 2)
    close(g3, 24 * v)


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True:UserWarning")
def test_create_graph_backward_gives_a_differentiable_grad(torch):
    def run(M):
        x = M.tensor([0.3, 1.2], requires_grad=True)
        x.sin().sum().backward(create_graph=True)
        g = x.grad
        x.grad = None
        (g * g).sum().backward()
        return arr(x.grad)
    np.testing.assert_allclose(run(E), run(torch), rtol=1e-5)


def test_mixed_second_derivative(torch):
    def run(M):
        x = M.tensor([0.7], requires_grad=True)
        y = M.tensor([-1.3], requires_grad=True)
        gx, = M.autograd.grad((x * y.exp()).sum(), x, create_graph=True)
        return arr(M.autograd.grad(gx.sum(), y)[0])
    np.testing.assert_allclose(run(E), np.exp([-1.3]), rtol=1e-6)
    np.testing.assert_allclose(run(E), run(torch), rtol=1e-6)


# ----- complex numbers: the conjugate Wirtinger convention ------------------------

def test_seed_example_f_of_z_equals_c_times_z():
    # seed: f(z) = c * z with c real, grad_output 1: dL/dz* = 1 * 0 + 1 * c = c
    c = 2.5
    z = E.tensor([1 + 2j, -0.5 + 0.25j], requires_grad=True)
    (c * z).backward(E.ones(2, dtype=E.complex64))
    close(z.grad, [c, c])


def test_holomorphic_gradient_is_the_conjugate_derivative_times_grad_output():
    # dL/dz* = grad_output * conj(f'(z)) for holomorphic f
    zv = np.array([0.3 + 0.4j, -1.0 + 0.5j], dtype=np.complex64)
    v = np.array([1.0 - 1.0j, 0.5 + 2.0j], dtype=np.complex64)
    z = E.tensor(zv, requires_grad=True)
    (z * z).backward(E.tensor(v))
    close(z.grad, v * np.conj(2 * zv))


def test_real_loss_of_a_complex_input_squared_modulus():
    # L = |z|^2 = z conj(z): dL/dz* = z, and PyTorch reports 2 dL/dz* = 2 z
    zv = np.array([1.0 + 2.0j, -3.0 + 0.5j], dtype=np.complex64)
    z = E.tensor(zv, requires_grad=True)
    (z * z.conj()).real.sum().backward()
    close(z.grad, 2 * zv)


COMPLEX_FUNCTIONS = {
    "abs": lambda M, z, w: z.abs().sum(),
    "mul_conj": lambda M, z, w: (z * w.conj()).real.sum(),
    "exp_imag": lambda M, z, w: z.exp().imag.sum(),
    "sin_abs": lambda M, z, w: z.sin().abs().sum(),
    "angle": lambda M, z, w: z.angle().sum(),
    "div": lambda M, z, w: (z / w).real.sum(),
    "matmul": lambda M, z, w: (z.unsqueeze(0) @ w.unsqueeze(1)).abs().sum(),
}


@pytest.mark.parametrize("name", list(COMPLEX_FUNCTIONS))
def test_complex_gradients_match_torch(torch, name):
    def run(M):
        z = M.tensor([0.3 + 0.4j, -1.0 + 0.5j, 2.0 - 1.0j], requires_grad=True)
        w = M.tensor([1.0 - 0.5j, 0.25 + 2.0j, -1.5 - 0.5j], requires_grad=True)
        COMPLEX_FUNCTIONS[name](M, z, w).backward()
        return [arr(t.grad) if t.grad is not None else None for t in (z, w)]
    for ours, theirs in zip(run(E), run(torch)):
        if theirs is None:
            assert ours is None
        else:
            np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


# ----- the one-liner -----------------------------------------------------------

def test_readme_one_liner_prints_the_gradient():
    code = ("import adcheck.refengine as E; x = E.tensor([1., 2.], requires_grad=True); "
            "(x * x).sum().backward(); print(x.grad)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "tensor([2., 4.])\n"
