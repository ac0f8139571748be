"""Custom autograd.Function: contexts, saved tensors, dirty and non-differentiable
outputs, materialized grads, once_differentiable, forward-mode jvp."""
from __future__ import annotations

import pytest

from adcheck.conformance.case import AUTOGRAD_NOTE, MECHANICS, case
from adcheck.conformance.compare import assert_close


def _square(E):
    class Square(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 2 * x * grad
    return Square


@case("The Node that is created is a wrapper around the user-defined backward function "
      "(and the name is appended with Backward", source=AUTOGRAD_NOTE)
def apply_connects_graph_and_names_the_node(E):
    Square = _square(E)
    x = E.tensor([1.0, 3.0], requires_grad=True)
    h = x * 1
    y = Square.apply(h)
    assert y.grad_fn.name() == "SquareBackward"
    assert y.grad_fn.next_functions[0][0] is h.grad_fn
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 6.0]


@case("When defining a custom Python Function, you can use save_for_backward to save "
      "tensors during the forward pass and saved_tensors to retrieve them during the "
      "backward pass.", source=MECHANICS)
def setup_context_style(E):
    class Mul(E.autograd.Function):
        @staticmethod
        def forward(x, y):
            return x * y

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)

        @staticmethod
        def backward(ctx, grad):
            x, y = ctx.saved_tensors
            return grad * y, grad * x
    a = E.tensor([2.0], requires_grad=True)
    b = E.tensor([5.0], requires_grad=True)
    Mul.apply(a, b).backward()
    assert a.grad.tolist() == [5.0] and b.grad.tolist() == [2.0]


@case("It also takes care of making sure that the Tensors given to the .backward() "
      "function have not been modified in-place.", source=AUTOGRAD_NOTE)
def saved_tensors_are_version_checked(E):
    Square = _square(E)
    x = E.ones(2, requires_grad=True)
    h = x * 1
    y = Square.apply(h)
    h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"
                                           ".*is at version 1; expected version 0"):
        y.sum().backward()


@case("The Function wrapper takes care of managing this version by using the information "
      "provided by the .mark_dirty() method available on the context.",
      source=AUTOGRAD_NOTE)
def mark_dirty_bumps_version_and_rebases(E):
    class AddOne_(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad * 3
    leaf = E.ones(2, requires_grad=True)
    h = leaf * 1
    before = h.grad_fn
    out = AddOne_.apply(h)
    assert out is h and h.tolist() == [2.0, 2.0]
    assert h._version == 2          # the add_ inside forward, then mark_dirty
    assert h.grad_fn is not before and h.grad_fn.name() == "AddOne_Backward"
    h.sum().backward()
    assert leaf.grad.tolist() == [3.0, 3.0]


@case("If the function is not a deterministic mapping ... it will be marked as "
      "non-differentiable.", source=MECHANICS)
def mark_non_differentiable_outputs(E):
    class DoubleAndFlag(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            values = x * 2
            flags = x > 0
            ctx.mark_non_differentiable(flags)
            return values, flags

        @staticmethod
        def backward(ctx, grad_values, grad_flags):
            assert grad_flags is None or not any(grad_flags.tolist())
            return grad_values * 2
    x = E.tensor([1.0, -1.0], requires_grad=True)
    values, flags = DoubleAndFlag.apply(x)
    assert values.requires_grad and not flags.requires_grad and flags.grad_fn is None
    values.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


@case("A gradient of 0 (or independent) can be expressed in any of the following ways: "
      "A Tensor full of zeros; In python, a None Tensor", source=AUTOGRAD_NOTE)
def set_materialize_grads(E):
    def make(materialize):
        class Two(E.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(materialize)
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, ga, gb):
                seen.append(None if gb is None else gb.tolist())
                return ga * 2 if gb is None else ga * 2 + gb * 3
        return Two
    for materialize, expected in ((True, [0.0, 0.0]), (False, None)):
        seen = []
        x = E.ones(2, requires_grad=True)
        a, _ = make(materialize).apply(x)
        a.sum().backward()
        assert seen == [expected] and x.grad.tolist() == [2.0, 2.0]


@case("During the forward pass, an operation is only recorded in the backward graph if "
      "at least one of its input tensors require grad.", source=MECHANICS)
def needs_input_grad_and_non_tensor_arguments(E):
    class Scale(E.autograd.Function):
        @staticmethod
        def forward(ctx, x, factor, y, label):
            ctx.factor = factor
            flags.append(ctx.needs_input_grad)
            return x * factor + y, label.upper()

        @staticmethod
        def backward(ctx, grad, _unused):
            flags.append(ctx.needs_input_grad)
            gx = grad * ctx.factor if ctx.needs_input_grad[0] else None
            gy = grad if ctx.needs_input_grad[2] else None
            return gx, None, gy, None
    flags = []
    x = E.ones(2, requires_grad=True)
    y = E.ones(2)
    out, text = Scale.apply(x, 4.0, y, "tag")
    assert text == "TAG"
    out.sum().backward()
    assert flags == [(True, False, False, False)] * 2
    assert x.grad.tolist() == [4.0, 4.0]


@case("When defining a custom Python Function, you can use save_for_backward to save "
      "tensors during the forward pass and saved_tensors to retrieve them during the "
      "backward pass. See extending for more information.", source=MECHANICS)
def once_differentiable_backward_is_not_differentiated(E):
    once_differentiable = E.autograd.function.once_differentiable

    class Cube(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        @once_differentiable
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 3 * x * x * grad
    x = E.tensor([2.0], requires_grad=True)
    (g,) = E.autograd.grad(Cube.apply(x), x, create_graph=True)
    assert g.tolist() == [12.0]
    with pytest.raises(RuntimeError):
        g.backward()


@case("We use autograd.Function as a nice interface to create this graph. Indeed, during "
      "the .apply, the forward is invoked and all the inputs and outputs are connected "
      "properly to the exiting graph associated to the inputs.", source=AUTOGRAD_NOTE)
def output_that_is_a_view_of_the_input(E):
    class Head(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x[:2]

        @staticmethod
        def backward(ctx, grad):
            full = E.zeros(3)
            full[:2] = grad * 5
            return full
    x = E.ones(3, requires_grad=True)
    h = x * 1
    out = Head.apply(h)
    assert out._is_view() and out._base is h
    out.sum().backward()
    assert x.grad.tolist() == [5.0, 5.0, 0.0]
    out2 = Head.apply(x * 1)
    with pytest.raises(RuntimeError, match="is a view and is being modified inplace"):
        out2.mul_(2)


@case("Indeed, during the .apply, the forward is invoked and all the inputs and outputs "
      "are connected properly to the exiting graph associated to the inputs.",
      source=AUTOGRAD_NOTE)
def input_returned_as_is_is_a_new_view(E):
    class Identity(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad * 7
    x = E.ones(2, requires_grad=True)
    out = Identity.apply(x)
    assert out is not x and out._is_view() and out._base is x
    out.sum().backward()
    assert x.grad.tolist() == [7.0, 7.0]


@case("When defining a custom Python Function, you can use save_for_backward to save "
      "tensors during the forward pass and saved_tensors to retrieve them during the "
      "backward pass.", source=MECHANICS)
def jvp_with_save_for_forward(E):
    fwAD = E.autograd.forward_ad

    class Sin(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            ctx.save_for_forward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * x.cos()

        @staticmethod
        def jvp(ctx, tangent):
            (x,) = ctx.saved_tensors
            return tangent * x.cos()
    primal = E.tensor([0.25, 1.0], dtype=E.float64)
    tangent = E.tensor([2.0, -1.0], dtype=E.float64)
    with fwAD.dual_level():
        out = Sin.apply(fwAD.make_dual(primal, tangent))
        result = fwAD.unpack_dual(out)
    assert_close(result.primal, E.sin(primal), rtol=1e-12)
    assert_close(result.tangent, tangent * E.cos(primal), rtol=1e-12)
    x = primal.clone().requires_grad_()
    Sin.apply(x).sum().backward()
    assert_close(x.grad, E.cos(primal), rtol=1e-12)
