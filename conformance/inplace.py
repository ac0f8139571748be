"""In-place operations: version counters, saved-value checks, graph rewriting."""
from __future__ import annotations

import pytest

from adcheck.conformance.case import AUTOGRAD_NOTE, MECHANICS, case
from adcheck.conformance.compare import assert_close, op_label, version_error


@case("if a tensor is referenced in different places, the in-place operation should "
      "modify all these references.", source=AUTOGRAD_NOTE)
def inplace_is_seen_through_every_reference(E):
    x = E.ones(2, 3, requires_grad=True)
    z = x * 1
    alias, flat = z, z.view(6)
    z.mul_(2)
    assert alias.tolist() == [[2.0] * 3] * 2
    assert flat.tolist() == [2.0] * 6


@case("Every tensor keeps a version counter, that is incremented every time it is marked "
      "dirty in any operation.", source=MECHANICS)
def version_counter_counts_inplace_ops(E):
    x = E.ones(3, requires_grad=True)
    z = x * 1
    assert z._version == 0
    z.add_(1)
    z.mul_(2)
    z.exp_()
    assert z._version == 3
    _ = z + 1, z.exp(), z.sum()
    assert z._version == 3
    z[0] = 5.0
    assert z._version == 4


@case("When a Function saves any tensors for backward, a version counter of their "
      "containing Tensor is saved as well. Once you access self.saved_tensors it is "
      "checked, and if it is greater than the saved value an error is raised.",
      source=MECHANICS)
def modified_saved_output_raises(E):
    x = E.ones(3, requires_grad=True)
    y = x.exp()
    name = op_label(y.grad_fn)
    y.add_(1)
    with pytest.raises(RuntimeError, match=version_error(name, now=1, saved=0)):
        y.sum().backward()


@case("if op_1 needs the value of its output z_0 to compute J_{op_1}, then the autograd "
      "computation cannot be performed correctly anymore. Because we do not want to hide "
      "memory allocation from the user, the backward pass will raise an error.",
      source=AUTOGRAD_NOTE)
def modified_saved_input_raises_with_versions(E):
    x = E.ones(3, requires_grad=True)
    y = x * 1
    producer = op_label(y.grad_fn)
    z = y.sin()
    y.mul_(2)
    y.mul_(2)
    with pytest.raises(RuntimeError, match=version_error(producer, now=2, saved=0)):
        z.sum().backward()


@case("This ensures that if you're using in-place functions and not seeing any errors, "
      "you can be sure that the computed gradients are correct.", source=MECHANICS)
def inplace_without_error_gives_correct_gradient(E):
    x = E.tensor([0.5, -1.0], dtype=E.float64, requires_grad=True)
    z = x * 3          # z_0 = op_1(x): its backward needs no saved z
    z.exp_()           # z_1 = op_2_(z_0)
    z.sum().backward()
    assert_close(x.grad, 3 * E.exp(3 * x.detach()), rtol=1e-12)


@case("to be able to perform this backward pass we need to either replace op_2_ with an "
      "equivalent out-of-place operation or make sure op_2_ modifies in-place a copy of z "
      "by adding a .clone() for example.", source=AUTOGRAD_NOTE)
def clone_or_out_of_place_avoids_the_error(E):
    expected = 2 * E.exp(E.ones(2, dtype=E.float64))
    for fix in ("clone", "out_of_place"):
        x = E.ones(2, dtype=E.float64, requires_grad=True)
        z = x.exp()
        if fix == "clone":
            w = z.clone()
            w.add_(1)
        else:
            w = z.add(1)
        (z + w).sum().backward()
        assert_close(x.grad, expected, rtol=1e-12)


@case("Update the value of a tensor that requires gradients without this update being "
      "recorded: initialization of the weights of a neural network.", source=AUTOGRAD_NOTE)
def inplace_on_leaf_requiring_grad_raises(E):
    x = E.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being "
                                           "used in an in-place operation"):
        x.add_(1)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        x.zero_()
    assert x.tolist() == [1.0, 1.0, 1.0] and x.is_leaf


@case("In such a case, ... the in-place operations will only create a linear chain of "
      "Node s as if x.op_() was written x = x.op()", source=AUTOGRAD_NOTE)
def inplace_makes_its_node_the_grad_fn(E):
    x = E.ones(3, requires_grad=True)
    y = x * 2
    before = y.grad_fn
    y.mul_(3)
    after = y.grad_fn
    assert after is not before and after is not None
    assert after.next_functions[0][0] is before
    y.exp_()
    assert y.grad_fn.next_functions[0][0] is after


@case("in-place operations, require changing the creator of all inputs to the Function "
      "representing this operation.", source=MECHANICS)
def inplace_on_non_requiring_tensor_joins_the_graph(E):
    x = E.tensor([2.0, 3.0], dtype=E.float64, requires_grad=True)
    buf = E.zeros(2, dtype=E.float64)
    assert buf.grad_fn is None and not buf.requires_grad
    buf.add_(x * x)
    assert buf.requires_grad and buf.grad_fn is not None and not buf.is_leaf
    buf.sum().backward()
    assert x.grad.tolist() == [4.0, 6.0]


@case("Update the value of a tensor that requires gradients without this update being "
      "recorded: initialization of the weights of a neural network.", source=AUTOGRAD_NOTE)
def no_grad_inplace_on_leaf_is_not_recorded(E):
    w = E.ones(3, requires_grad=True)
    with E.no_grad():
        w.mul_(2)
    assert w.is_leaf and w.grad_fn is None and w.requires_grad
    assert w._version == 1
    (w * w).sum().backward()
    assert w.grad.tolist() == [4.0, 4.0, 4.0]


@case("Update the value of a tensor that requires gradients without this update being "
      "recorded: initialization of the weights of a neural network.", source=AUTOGRAD_NOTE)
def data_writes_are_not_recorded(E):
    w = E.ones(3, requires_grad=True)
    w.data.mul_(3)
    assert w.tolist() == [3.0, 3.0, 3.0]
    assert w.is_leaf and w.grad_fn is None and w._version == 0
    d = w.data
    assert d.requires_grad is False
    (w * w).sum().backward()
    assert w.grad.tolist() == [6.0, 6.0, 6.0]


@case("Every tensor keeps a version counter, that is incremented every time it is marked "
      "dirty in any operation.", source=MECHANICS)
def no_grad_inplace_still_invalidates_saved_tensors(E):
    x = E.ones(3, requires_grad=True)
    y = x.exp()
    with E.no_grad():
        y.add_(1)
    assert y._version == 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


@case("Every tensor keeps a version counter, that is incremented every time it is marked "
      "dirty in any operation.", source=MECHANICS)
def data_write_does_not_invalidate_saved_tensors(E):
    x = E.ones(3, dtype=E.float64, requires_grad=True)
    y = x * x
    x.data.mul_(2)
    y.sum().backward()
    assert x.grad.tolist() == [4.0, 4.0, 4.0]


@case("The corresponding autograd computations can simply be written using the implicit "
      "variables: v^T J_f = v^T J_{op_2_} J_{op_1}", source=AUTOGRAD_NOTE)
def chain_of_inplace_ops_differentiates_each_version(E):
    x = E.tensor([0.3, 0.7], dtype=E.float64, requires_grad=True)
    z = x * 2
    z.sin_()
    z.mul_(3)
    z.add_(1)
    assert z._version == 3
    z.sum().backward()
    assert_close(x.grad, 3 * E.cos(2 * x.detach()) * 2, rtol=1e-12)


@case("we make in-place operations actually be in-place during the forward pass giving "
      "exactly the same behavior as any other non-autograd library that provides in-place "
      "operations.", source=AUTOGRAD_NOTE)
def inplace_returns_the_same_tensor(E):
    x = E.ones(3, requires_grad=True)
    z = x * 1
    view = z[1:]
    assert z.add_(1) is z and z.mul_(2) is z and view.neg_() is view
    assert z.tolist() == [4.0, -4.0, -4.0]
    plain = E.zeros(2)
    assert plain.fill_(3.0) is plain and plain.tolist() == [3.0, 3.0]
