"""Hooks and gradients where PyTorch pins down what the notes leave open.

What a hook sees (None, the adopted first gradient, None for edges grad()
did not ask for), what it may return, what it may be, the order in which
leaves get their gradient, and what a custom Function's backward receives
for outputs without a gradient.
"""
from __future__ import annotations

import warnings

import pytest

from adcheck.conformance.case import MECHANICS, TORCH_BEHAVIOUR, case


def _none_backward(E):
    """A Function whose backward sends no gradient to its input."""
    class Stop(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return None
    return Stop


@case("Hooks that are executed later can observe the modifications to the gradient made by "
      "earlier hooks.", source=MECHANICS)
def first_gradient_is_adopted_by_grad(E):
    # The gradient reaching AccumulateGrad (made by its pre-hook here) becomes
    # .grad without a copy, so the post-accumulate hook's in-place change is
    # what the node's post-hook sees.
    t = E.tensor([1.0, 2.0, 3.0], requires_grad=True)
    acc = t.view_as(t).grad_fn.next_functions[0][0]
    seen = []

    def add_half(v):
        v.grad.add_(0.5)
    t.register_hook(lambda g: g.sub(2.0))
    acc.register_prehook(lambda go: (go[0].div(5.0),))
    t.register_post_accumulate_grad_hook(add_half)
    acc.register_hook(lambda gi, go: seen.append(go[0].tolist()))
    t.backward(E.tensor([5.0, 6.0, 7.0]))
    assert [round(v, 5) for v in seen[0]] == [1.1, 1.3, 1.5]


@case("the first gradient of a leaf is adopted (shared, not copied) when nothing else holds "
      "it: backward through a view of a leaf with a gradient tensor g makes .grad share g's "
      "memory; with create_graph it is copied (CopyBackwards)", source=TORCH_BEHAVIOUR)
def adopted_gradient_shares_memory(E):
    x = E.ones(3, requires_grad=True)
    g = E.ones(3)
    x.view(3).backward(g)
    g.add_(1)
    assert x.grad.tolist() == [2.0, 2.0, 2.0]
    x = E.ones(3, requires_grad=True)
    held = E.ones(3)
    x.backward(held)                # the caller holds it: copied
    held.add_(1)
    assert x.grad.tolist() == [1.0, 1.0, 1.0]
    x = E.ones(3, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # torch warns of the .grad <-> graph cycle
        (x ** 2).sum().backward(create_graph=True)
    assert x.grad.grad_fn.name().endswith("CopyBackwards")
    x.grad = None                           # break that cycle


@case("for leaf Tensors that have .grad accumulated, post-accumulate-grad hooks are executed",
      source=MECHANICS)
def post_accumulate_hook_must_return_none(E):
    x = E.ones(2, requires_grad=True)
    x.register_post_accumulate_grad_hook(lambda t: t.grad * 2)
    with pytest.raises(RuntimeError, match="Tensor post accumulate grad hooks should return None."):
        x.sum().backward()
    y = E.ones(2, requires_grad=True)
    y.register_post_accumulate_grad_hook(lambda t: 5)
    with pytest.raises(TypeError, match="expected Variable, but hook returned 'int'"):
        y.sum().backward()


@case("hooks are accepted whatever they are (register_hook on a Tensor or a Node, "
      "register_prehook, register_post_accumulate_grad_hook); calling one that is not "
      "callable fails during backward with a TypeError", source=TORCH_BEHAVIOUR)
def hooks_are_checked_when_called(E):
    x = E.ones(2, requires_grad=True)
    y = x * 2
    for register in (y.grad_fn.register_hook, y.grad_fn.register_prehook, x.register_hook,
                     x.register_post_accumulate_grad_hook):
        handle = register(1)
        handle.remove()
    y.grad_fn.register_hook("not callable")
    with pytest.raises(TypeError, match="'str' object is not callable"):
        y.sum().backward()


@case("tensor hooks run with None when the tensor's node is reached without a gradient for "
      "it, and a leaf's post-accumulate hooks run then too", source=TORCH_BEHAVIOUR)
def hooks_run_with_none(E):
    x = E.ones(2, requires_grad=True)
    y = x * 3
    seen = []
    y.register_hook(lambda g: seen.append(("y", g)))
    x.register_hook(lambda g: seen.append(("x", g)))
    x.register_post_accumulate_grad_hook(lambda t: seen.append(("acc", t.grad)))
    _none_backward(E).apply(y).sum().backward()
    assert seen == [("y", None), ("x", None), ("acc", None)]


@case("post-hooks registered to Node are executed (if Node is executed)", source=MECHANICS)
def node_post_hook_sees_none_for_edges_not_asked(E):
    x = E.ones(2, requires_grad=True)
    w = E.ones(2, requires_grad=True)
    y = x * w
    seen = []
    y.grad_fn.register_hook(lambda gi, go: seen.append([g is None for g in gi]))
    E.autograd.grad(y.sum(), [x])
    y = x * w
    y.grad_fn.register_hook(lambda gi, go: seen.append([g is None for g in gi]))
    y.sum().backward(inputs=[w])
    assert seen == [[False, True], [True, False]]


@case("a Python number given where PyTorch takes a Scalar (pow's exponent or base, clamp's "
      "bounds, 1 - x) is no input of the node: PowBackward0 of x ** 2 has one next function",
      source=TORCH_BEHAVIOUR)
def number_arguments_are_not_node_inputs(E):
    x = E.ones(2, requires_grad=True)
    counts = {name: len(y.grad_fn.next_functions) for name, y in (
        ("pow", x ** 2), ("rpow", 2 ** x), ("clamp", x.clamp(0, 1)), ("rsub", 1 - x),
        ("fmod", x.fmod(2)), ("mul", x * 2), ("rmul", 2 * x), ("pow_t", x ** E.tensor(2.0)))}
    assert counts == {"pow": 1, "rpow": 1, "clamp": 1, "rsub": 1, "fmod": 1, "mul": 2,
                      "rmul": 2, "pow_t": 2}
    assert (2 * x).grad_fn.next_functions[1][0] is None       # self is x, as for x * 2
    assert (x ** 2).grad_fn._saved_exponent == 2


@case("the leaves' AccumulateGrad nodes run as soon as they are ready, before other nodes; "
      "leaves made ready together run in PyTorch's heap order", source=TORCH_BEHAVIOUR)
def leaves_receive_gradients_in_torch_order(E):
    ts = [E.tensor([1.0], requires_grad=True) for _ in range(5)]
    order = []
    for i, t in enumerate(ts):
        t.register_hook(lambda g, i=i: order.append(i))

    def run(make):
        order.clear()
        make().sum().backward()
        return list(order)
    assert run(lambda: ts[0] * 2 + ts[1] * 3) == [1, 0]
    assert run(lambda: ts[1] * 3 + ts[0] * 2) == [0, 1]
    assert run(lambda: E.stack(ts)) == [0, 2, 4, 1, 3]
    assert run(lambda: E.stack(ts[:4])) == [0, 2, 1, 3]


@case("register_multi_grad_hook with mode='any' fires once, with the first gradient "
      "computed among the tensors (a leaf's as soon as its AccumulateGrad runs)",
      source=TORCH_BEHAVIOUR)
def multi_grad_hook_any_gets_first_gradient(E):
    a = E.tensor([1.0, 2.0], requires_grad=True)
    b = E.tensor([3.0, 4.0], requires_grad=True)
    seen = []
    E.autograd.graph.register_multi_grad_hook((a, b), lambda g: seen.append(g.tolist()),
                                              mode="any")
    (a * 2 + b * 3).sum().backward()
    (b * 7 + a * 0).sum().backward()
    assert seen == [[3.0, 3.0], [0.0, 0.0]]


@case("During the backward pass, the gradient of any output that is not a tensor is None; "
      "with set_materialize_grads(False) every output without a gradient gets None, otherwise "
      "a tensor output gets zeros", source=TORCH_BEHAVIOUR)
def custom_backward_gets_none_for_non_tensor_outputs(E):
    received = []

    def function(materialize):
        class Many(E.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(materialize)
                return x * 2, 5, x * 3, None

            @staticmethod
            def backward(ctx, *grads):
                received.append([None if g is None else g.tolist() for g in grads])
                return grads[0]
        return Many

    for materialize in (True, False):
        x = E.ones(2, requires_grad=True)
        a, _, _, _ = function(materialize).apply(x)
        a.sum().backward()
    assert received == [[[1.0, 1.0], None, [0.0, 0.0], None], [[1.0, 1.0], None, None, None]]


@case("a Python number operand of a tensor op (x * 2) is saved as a tensor, freed after "
      "backward like any saved tensor", source=TORCH_BEHAVIOUR)
def number_operand_is_saved_and_freed(E):
    # x * 2 saves the number 2 as a tensor: the graph is freed after backward
    x = E.ones(2, requires_grad=True)
    y = x * 2
    assert y.grad_fn._saved_other.item() == 2
    y.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.grad_fn._saved_other

