"""Views and in-place: shared storage, rebasing (CopySlices), detach, indexing."""
from __future__ import annotations

import pytest

from adcheck.conformance.case import AUTOGRAD_NOTE, MECHANICS, case
from adcheck.conformance.compare import assert_close


def _x(E, rows=2, cols=3):
    data = [[float(r * cols + c + 1) for c in range(cols)] for r in range(rows)]
    return E.tensor(data, dtype=E.float64, requires_grad=True)


@case("y is a view into z ... z now points to z_1 which is the result of op_2_ ... "
      "y now points to z_1.select(0, 0)", source=AUTOGRAD_NOTE)
def view_sees_inplace_on_base_and_differentiates_through_it(E):
    x = _x(E)
    z = x * 1
    y = z.select(0, 0)
    z.mul_(2)
    assert y.tolist() == [2.0, 4.0, 6.0]
    y.sum().backward()
    assert x.grad.tolist() == [[2.0, 2.0, 2.0], [0.0, 0.0, 0.0]]


@case("You can check if a Tensor is a view with ._is_view and query the Tensor it is a "
      "view of with ._base .", source=AUTOGRAD_NOTE)
def is_view_and_base(E):
    x = _x(E)
    z = x * 1
    for v in (z[0], z[:, 1:], z.t(), z.view(6), z.transpose(0, 1), z.select(1, 2),
              z.narrow(1, 0, 2), z.unsqueeze(0), z.expand(4, 2, 3), z.diagonal()):
        assert v._is_view() and v._base is z
    assert not z._is_view() and z._base is None
    assert z[0][1:]._base is z          # a view of a view has the root as base


@case("If this Tensor is not modified in-place, then its .grad_fn is the Node associated "
      "with the view operation. And the base's .grad_fn is the Node that corresponds to "
      "its forward function.", source=AUTOGRAD_NOTE)
def unmodified_view_has_view_node(E):
    x = _x(E)
    z = x * 1
    forward_node = z.grad_fn
    v = z[0]
    assert v.grad_fn is not forward_node
    assert v.grad_fn.next_functions[0][0] is forward_node
    assert z.grad_fn is forward_node


@case("The base .grad_fn becomes a CopySlices . This special Node is a wrapper around "
      "the Node corresponding to the in-place operations and apply it to the subset of "
      "the base on which the in-place operation was performed (through the view).",
      source=AUTOGRAD_NOTE)
def inplace_on_view_rebases_the_base(E):
    x = E.tensor([1.0, 2.0, 3.0], dtype=E.float64, requires_grad=True)
    z = x * 1
    forward_node = z.grad_fn
    v = z[1:]
    v.mul_(x[1:].detach())
    assert z.tolist() == [1.0, 4.0, 9.0]
    assert "CopySlices" in z.grad_fn.name()
    assert forward_node in [fn for fn, _ in z.grad_fn.next_functions]
    z.sum().backward()
    assert x.grad.tolist() == [1.0, 2.0, 3.0]


@case("All the views' .grad_fn become AsStridedBackard s that point to the newly "
      "created CopySlices from the base.", source=AUTOGRAD_NOTE)
def views_grad_fn_regenerated_from_base(E):
    x = _x(E)
    z = x * 1
    a, b = z[0], z[1]
    a.mul_(3)
    assert a.grad_fn.next_functions[0][0] is z.grad_fn
    assert b.grad_fn.next_functions[0][0] is z.grad_fn
    (a.sum() + 10 * b.sum()).backward()
    assert x.grad.tolist() == [[3.0] * 3, [10.0] * 3]


@case("This is repeated every time an in-place operation is performed on a view and so "
      "the base's backward graph can contain a chain of CopySlices before finally "
      "getting to the Node that corresponds to its forward function.",
      source=AUTOGRAD_NOTE)
def chain_of_copyslices(E):
    x = E.tensor([1.0, 1.0, 1.0], dtype=E.float64, requires_grad=True)
    z = x * 1
    forward_node = z.grad_fn
    z[0:1].mul_(2)
    first = z.grad_fn
    z[1:2].mul_(3)
    z[0:2].mul_(5)
    assert all("CopySlices" in n.name() for n in (first, z.grad_fn))
    node, depth = z.grad_fn, 0
    while node is not forward_node and depth < 10:
        node = next(fn for fn, _ in node.next_functions if fn is not None)
        depth += 1
    assert depth == 3
    z.sum().backward()
    assert x.grad.tolist() == [10.0, 15.0, 1.0]


@case("detach is returning a new Tensor object that shares the same Storage. The Tensor "
      "is the same except that it does not require gradient and its grad_fn is None.",
      source=AUTOGRAD_NOTE)
def detach_shares_storage_and_version(E):
    x = E.ones(3, requires_grad=True)
    z = x * 2
    d = z.detach()
    assert d is not z and d.requires_grad is False and d.grad_fn is None
    d.add_(1)
    assert z.tolist() == [3.0, 3.0, 3.0]
    assert z._version == d._version == 1


@case("Note that the new Tensor shares the same data as the original one (it is a view). "
      "This means that in-place operations on y will change values in x .",
      source=AUTOGRAD_NOTE)
def detach_inplace_invalidates_saved_tensor(E):
    x = E.ones(3, requires_grad=True)
    y = x.exp()
    y.detach().zero_()
    assert y.tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


@case("the view operations are responsible to mark any views that they make as being "
      "linked to the input.", source=AUTOGRAD_NOTE)
def basic_indexing_views_advanced_indexing_copies(E):
    z = E.zeros(4)
    basic = z[1:3]
    assert basic._is_view()
    basic.fill_(1.0)
    assert z.tolist() == [0.0, 1.0, 1.0, 0.0]
    advanced = z[E.tensor([0, 2])]
    masked = z[z > 0.5]
    assert not advanced._is_view() and not masked._is_view()
    advanced.fill_(7.0)
    masked.fill_(9.0)
    assert z.tolist() == [0.0, 1.0, 1.0, 0.0]


@case("the in-place operation should modify all these references.",
      source=AUTOGRAD_NOTE)
def views_share_the_version_counter(E):
    x = E.ones(2, 3, requires_grad=True)
    z = x * 1
    v, w = z[0], z.t()
    v.add_(1)
    assert z._version == v._version == w._version == 1
    z.mul_(2)
    assert w._version == 2 and w.tolist() == [[4.0, 2.0]] * 3


@case("Building the graph is more complex as we allow both views and in-place "
      "operations.", source=AUTOGRAD_NOTE)
def setitem_is_differentiable_for_both_sides(E):
    x = E.tensor([1.0, 2.0, 3.0], dtype=E.float64, requires_grad=True)
    w = E.tensor([5.0, 7.0], dtype=E.float64, requires_grad=True)
    z = x * 1
    z[1:] = w * 2
    assert z.tolist() == [1.0, 10.0, 14.0]
    (z * z).sum().backward()
    assert x.grad.tolist() == [2.0, 0.0, 0.0]
    assert w.grad.tolist() == [40.0, 56.0]


@case("Building the graph is more complex as we allow both views and in-place "
      "operations.", source=AUTOGRAD_NOTE)
def setitem_with_index_and_mask(E):
    x = E.tensor([1.0, 2.0, 3.0, 4.0], dtype=E.float64, requires_grad=True)
    w = E.tensor([10.0, 20.0], dtype=E.float64, requires_grad=True)
    z = x * 1
    z[E.tensor([0, 3])] = w
    z[z > 2.5] = 0.0
    assert z.tolist() == [0.0, 2.0, 0.0, 0.0]
    z.sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 0.0, 0.0]
    assert w.grad.tolist() == [0.0, 0.0]


@case("Because they modify the original value, if anything needs this value for the "
      "backward, the backward pass will fail.", source=AUTOGRAD_NOTE)
def inplace_on_view_of_saved_base_raises(E):
    x = E.ones(2, 3, requires_grad=True)
    y = x.exp()
    y[0].mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


@case("Update the value of a tensor that requires gradients without this update being "
      "recorded", source=AUTOGRAD_NOTE)
def inplace_on_view_of_leaf_raises(E):
    x = E.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad "
                                           "is being used in an in-place operation"):
        x[1:].mul_(2)
    with E.no_grad():
        x[1:].mul_(2)
    assert x.tolist() == [1.0, 2.0, 2.0] and x.is_leaf


@case("For example, if we split f into two elementary operations ... v^T J_g = v^T "
      "dy_1/dy_0 dy_0/dz_0 dz_0/dx", source=AUTOGRAD_NOTE)
def inplace_on_view_with_saved_values_differentiates_correctly(E):
    x = E.tensor([[0.5, 1.0], [1.5, 2.0]], dtype=E.float64, requires_grad=True)
    z = x * 1
    row = z[1]
    row.exp_()
    z.sum().backward()
    expected = [[1.0, 1.0], [E.exp(x[1, 0]).item(), E.exp(x[1, 1]).item()]]
    assert_close(x.grad, E.tensor(expected, dtype=E.float64), rtol=1e-12)


@case("in-place functions will raise an error if the storage of modified inputs is "
      "referenced by any other Tensor.", source=MECHANICS)
def inplace_on_multi_output_views_raises(E):
    x = E.ones(4, requires_grad=True)
    z = x * 1
    for parts in (z.unbind(0), z.split(2), z.chunk(2)):
        with pytest.raises(RuntimeError, match="is a view and is being modified inplace"
                                               ".*returns multiple views"):
            parts[0].mul_(2)
    assert z.tolist() == [1.0] * 4


@case("in-place functions will raise an error if the storage of modified inputs is "
      "referenced by any other Tensor.", source=MECHANICS)
def inplace_on_view_made_under_no_grad_raises(E):
    x = E.ones(4, requires_grad=True)
    z = x * 1
    with E.no_grad():
        v = z[:2]
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode and is "
                                           "being modified inplace with grad mode enabled"):
        v.mul_(2)
    with E.no_grad():
        v.mul_(2)
    assert z.tolist() == [2.0, 2.0, 1.0, 1.0]
