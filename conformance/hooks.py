"""Backward hooks: Tensor, post-accumulate-grad, Node hooks; firing and order."""
from __future__ import annotations

import pytest

from adcheck.conformance.case import AUTOGRAD_NOTE, MECHANICS, case


def _leaf(E, n=2):
    return E.ones(n, requires_grad=True)


@case("This hook function will be passes the computed gradient as input and can "
      "optionally return the new value for this gradient.", source=AUTOGRAD_NOTE)
def tensor_hook_may_replace_the_gradient(E):
    x = E.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    seen = []
    y.register_hook(lambda g: seen.append(g.tolist()))
    y.register_hook(lambda g: g * 10)
    (y * y).sum().backward()
    assert seen == [[6.0, 12.0]]
    assert x.grad.tolist() == [180.0, 360.0]


@case("A hook can be registered on any Tensor that requires gradients.",
      source=AUTOGRAD_NOTE)
def hook_on_tensor_without_grad_raises(E):
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that "
                                           "doesn't require gradient"):
        E.ones(2).register_hook(lambda g: g)


@case("The backward pass will compute the following for a given vector v: "
      "foo(v^T J_{op_2}) J_{op_1}.", source=AUTOGRAD_NOTE)
def hook_result_feeds_the_rest_of_the_chain(E):
    x = E.tensor([0.5, 1.0], dtype=E.float64, requires_grad=True)
    y = x * x                       # op_1
    y.register_hook(lambda g: g + 1)  # foo
    z = y * 4                       # op_2
    z.backward(E.tensor([1.0, 2.0], dtype=E.float64))
    assert x.grad.tolist() == [(4.0 + 1) * 1.0, (8.0 + 1) * 2.0]


@case("Hooks registered to a Tensor via torch.Tensor.register_hook are executed when "
      "gradients are being computed for that Tensor. ... if the Tensor is passed as part "
      "of the inputs argument to torch.autograd.grad, the Tensor's grad_fn may not be "
      "executed, but the hook register to that Tensor will always be executed.",
      source=MECHANICS)
def tensor_hook_fires_for_grad_inputs(E):
    x = _leaf(E)
    y = x * 2
    log = []
    y.register_hook(lambda g: log.append("tensor"))
    (g,) = E.autograd.grad((y * 3).sum(), [y])
    assert log == ["tensor"] and g.tolist() == [3.0, 3.0]


@case("the backward hooks registered to Nodes that correspond to the Tensors passed to "
      "input may not be executed, because those Nodes will not be executed unless there "
      "is another input that depends on the gradient result of this Node.",
      source=MECHANICS)
def node_hooks_skipped_under_grad_inputs(E):
    x = _leaf(E)
    y = x * 2
    log = []
    y.grad_fn.register_prehook(lambda go: log.append("pre"))
    y.grad_fn.register_hook(lambda gi, go: log.append("post"))
    y.register_hook(lambda g: log.append("tensor"))
    E.autograd.grad((y * 3).sum(), [y])
    assert log == ["tensor"]
    log.clear()
    E.autograd.grad((y * 3).sum(), [y, x])
    assert log == ["tensor", "pre", "post"]


@case("If you are using torch.autograd.backward, all of the above mentioned hooks will be "
      "executed, whether or not you specified the inputs argument.", source=MECHANICS)
def node_hooks_fire_under_backward_inputs(E):
    x = _leaf(E)
    y = x * 2
    log = []
    y.grad_fn.register_prehook(lambda go: log.append("pre"))
    y.grad_fn.register_hook(lambda gi, go: log.append("post"))
    y.register_hook(lambda g: log.append("tensor"))
    (y * 3).sum().backward(inputs=[y])
    assert log == ["tensor", "pre", "post"]
    assert y.grad.tolist() == [3.0, 3.0] and x.grad is None


@case("Hooks registered to a Tensor via torch.Tensor.register_post_accumulate_grad_hook "
      "are executed after the gradients have been accumulated for that Tensor, meaning "
      "the Tensor's grad field has been set.", source=MECHANICS)
def post_accumulate_grad_hook_sees_grad(E):
    x = _leaf(E)
    seen = []
    x.register_post_accumulate_grad_hook(lambda t: seen.append((t is x, t.grad.tolist())))
    (x * 4).sum().backward()
    (x * 4).sum().backward()
    assert seen == [(True, [4.0, 4.0]), (True, [8.0, 8.0])]


@case("Registering a hook via torch.Tensor.register_post_accumulate_grad_hook on a "
      "non-leaf Tensor will error, even if you call backward(retain_graph=True).",
      source=MECHANICS)
def post_accumulate_grad_hook_on_non_leaf_raises(E):
    y = _leaf(E) * 2
    y.retain_grad()
    with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be "
                                           "registered on non-leaf tensors"):
        y.register_post_accumulate_grad_hook(lambda t: None)


@case("Hooks registered to torch.autograd.graph.Node using Node.register_hook or "
      "Node.register_prehook are only fired if the Node it was registered to is executed.",
      source=MECHANICS)
def node_hooks_may_replace_gradients(E):
    x = _leaf(E)
    y = x * 2
    y.grad_fn.register_prehook(lambda grad_outputs: (grad_outputs[0] * 10,))
    y.sum().backward()
    assert x.grad.tolist() == [20.0, 20.0]
    x2 = _leaf(E)
    y2 = x2 * 2
    y2.grad_fn.register_hook(
        lambda grad_inputs, grad_outputs: tuple(None if g is None else g * 10
                                                for g in grad_inputs))
    y2.sum().backward()
    assert x2.grad.tolist() == [20.0, 20.0]
    x3 = _leaf(E)
    y3 = x3 * 2
    other = (x3 * 5).sum()
    y3.grad_fn.register_hook(lambda gi, go: pytest.fail("node was not executed"))
    other.backward()


@case("The order in which things happen are: hooks registered to Tensor are executed; "
      "pre-hooks registered to Node are executed (if Node is executed); the .grad field "
      "is updated for Tensors that retain_grad; Node is executed; for leaf Tensors that "
      "have .grad accumulated, post-accumulate-grad hooks are executed; post-hooks "
      "registered to Node are executed", source=MECHANICS)
def hook_order_on_non_leaf(E):
    # PyTorch updates a retained .grad before the Node pre-hooks run (the document
    # lists it after them); the observable order below is PyTorch's.
    x = _leaf(E)
    y = x * 2
    log = []
    y.grad_fn.register_hook(lambda gi, go: log.append(("post", y.grad is not None)))
    y.grad_fn.register_prehook(lambda go: log.append(("pre", y.grad is not None)))
    y.retain_grad()
    y.register_hook(lambda g: log.append(("tensor", y.grad is not None)))
    (y * 3).sum().backward()
    assert log == [("tensor", False), ("pre", True), ("post", True)]
    assert y.grad.tolist() == [3.0, 3.0]


@case("The order in which things happen are: hooks registered to Tensor are executed; "
      "pre-hooks registered to Node are executed (if Node is executed); ... Node is "
      "executed; for leaf Tensors that have .grad accumulated, post-accumulate-grad hooks "
      "are executed; post-hooks registered to Node are executed", source=MECHANICS)
def hook_order_on_leaf(E):
    x = _leaf(E)
    accumulate = (x * 1).grad_fn.next_functions[0][0]
    log = []
    accumulate.register_hook(lambda gi, go: log.append(("node-post", x.grad is not None)))
    x.register_post_accumulate_grad_hook(lambda t: log.append(("post-acc", t.grad is not None)))
    accumulate.register_prehook(lambda go: log.append(("node-pre", x.grad is not None)))
    x.register_hook(lambda g: log.append(("tensor", x.grad is not None)))
    (x * 3).sum().backward()
    assert log == [("tensor", False), ("node-pre", False), ("post-acc", True),
                   ("node-post", True)]
    log.clear()
    E.autograd.grad((x * 3).sum(), [x])
    assert [kind for kind, _ in log] == ["tensor"]


@case("If multiple hooks of the same type are registered on the same Tensor or Node they "
      "are executed in the order in which they are registered. Hooks that are executed "
      "later can observe the modifications to the gradient made by earlier hooks.",
      source=MECHANICS)
def hooks_run_in_registration_order(E):
    x = _leaf(E)
    y = x * 1
    seen = []
    y.register_hook(lambda g: g + 1)
    y.register_hook(lambda g: seen.append(("second", g.tolist())))
    y.register_hook(lambda g: g * 10)
    y.register_hook(lambda g: seen.append(("fourth", g.tolist())))
    pre = []
    y.grad_fn.register_prehook(lambda go: pre.append("a"))
    y.grad_fn.register_prehook(lambda go: pre.append("b"))
    y.sum().backward()
    assert seen == [("second", [2.0, 2.0]), ("fourth", [20.0, 20.0])]
    assert pre == ["a", "b"] and x.grad.tolist() == [20.0, 20.0]


@case("Hooks registered to a Tensor via torch.Tensor.register_hook are executed when "
      "gradients are being computed for that Tensor.", source=MECHANICS)
def removed_hooks_do_not_fire(E):
    x = _leaf(E)
    y = x * 1
    handles = [y.register_hook(lambda g: g * 100),
               y.grad_fn.register_prehook(lambda go: pytest.fail("prehook removed")),
               y.grad_fn.register_hook(lambda gi, go: pytest.fail("hook removed")),
               x.register_post_accumulate_grad_hook(lambda t: pytest.fail("removed"))]
    for handle in handles:
        handle.remove()
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


@case("if you register hooks to a Tensor, and then modify that Tensor in-place, hooks "
      "registered before in-place modification similarly receive gradients of the outputs "
      "with respect to the Tensor, but the value of the Tensor is taken to be its value "
      "before in-place modification.", source=MECHANICS)
def hooks_before_inplace_stay_with_the_old_grad_fn(E):
    x = E.tensor(1.0, dtype=E.float64, requires_grad=True)
    t = x.sin()
    got = []
    t.register_hook(lambda g: got.append(("old", g.item())))
    old_node = t.grad_fn
    t.cos_()
    t.register_hook(lambda g: got.append(("new", g.item())))
    assert t.grad_fn is not old_node
    t.backward()
    expected_old = -E.sin(E.sin(x.detach())).item()
    assert [k for k, _ in got] == ["new", "old"]
    assert got[0][1] == 1.0 and abs(got[1][1] - expected_old) < 1e-12


@case("torch.autograd.graph.register_multi_grad_hook is implemented using hooks "
      "registered to Tensors. ... the registered multi-grad hook is called when the last "
      "Tensor gradient is computed.", source=MECHANICS)
def multi_grad_hook_all_mode(E):
    a, b = _leaf(E), _leaf(E)
    calls = []

    def fn(grads):
        calls.append([None if g is None else g.tolist() for g in grads])
    handle = E.autograd.graph.register_multi_grad_hook((a, b), fn)
    (a * 2).sum().backward()
    (a * 2 + b * 3).sum().backward()
    assert calls == [[[2.0, 2.0], None], [[2.0, 2.0], [3.0, 3.0]]]
    handle.remove()
    (a * 2 + b * 3).sum().backward()
    assert len(calls) == 2


@case("torch.autograd.graph.register_multi_grad_hook is implemented using hooks "
      "registered to Tensors. Each individual Tensor hook is fired following the Tensor "
      "hook ordering defined above", source=MECHANICS)
def multi_grad_hook_any_mode(E):
    a, b = _leaf(E), _leaf(E)
    calls = []
    E.autograd.graph.register_multi_grad_hook((a, b), lambda g: calls.append(g.tolist()),
                                              mode="any")
    (a * 2 + b * 3).sum().backward()
    assert len(calls) == 1 and calls[0] in ([2.0, 2.0], [3.0, 3.0])
    (b * 5).sum().backward()
    assert calls[1] == [5.0, 5.0]
