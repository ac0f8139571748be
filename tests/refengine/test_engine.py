"""Storage and views, the dynamic graph's names and edges, leaves and retain_grad.

Expectations come from torch (the same program run on both modules) or from
calculus written out in the test. The backward engine and autograd.grad are
in test_backward_engine.py.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import adcheck.refengine as E
from engine_arrays import arr, close


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
