"""autograd.grad and backward(inputs=...): materialized zeros, refused arguments,
is_grads_batched errors, and where retained gradients are filled."""
from __future__ import annotations

import pytest

from adcheck.conformance.case import MECHANICS, TORCH_BEHAVIOUR, case


@case("grad(materialize_grads=True) gives zeros for unused inputs; with create_graph=True "
      "they are leaves that require grad, so they can be differentiated again",
      source=TORCH_BEHAVIOUR)
def materialized_zeros_can_be_differentiated_again(E):
    x = E.ones(2, requires_grad=True)
    y = E.ones(2, requires_grad=True)
    gx, gy = E.autograd.grad((x * x).sum(), [x, y], create_graph=True, materialize_grads=True)
    assert gy.tolist() == [0.0, 0.0] and gy.requires_grad and gy.is_leaf
    assert gx.requires_grad and gx.grad_fn is not None
    assert E.autograd.grad(gy.sum(), [x, y], allow_unused=True) == (None, None)
    zeros = E.autograd.grad(gy.sum(), [x, y], materialize_grads=True)
    assert [z.tolist() for z in zeros] == [[0.0, 0.0], [0.0, 0.0]]
    (hx,) = E.autograd.grad((gx * gy).sum(), [x], allow_unused=True)
    assert hx.tolist() == [0.0, 0.0]
    plain = E.autograd.grad((x * 2).sum(), [x, y], materialize_grads=True)
    assert not any(g.requires_grad for g in plain)
    with pytest.raises(ValueError, match="Expected allow_unused to be True or not passed"):
        E.autograd.grad((x * 2).sum(), [x, y], materialize_grads=True, allow_unused=False)


@case("grad() and backward() refuse an empty inputs argument with RuntimeError",
      source=TORCH_BEHAVIOUR)
def empty_inputs_are_refused(E):
    x = E.ones(2, requires_grad=True)
    for inputs in ([], ()):
        with pytest.raises(RuntimeError, match="`inputs` argument to `grad\\(\\)` cannot be "
                                               "empty"):
            E.autograd.grad((x * 2).sum(), inputs)
        with pytest.raises(RuntimeError, match="`inputs` argument to `backward\\(\\)` cannot "
                                               "be empty"):
            (x * 2).sum().backward(inputs=inputs)
    with pytest.raises(RuntimeError, match="The differentiated Tensor at index 1 appears to "
                                           "not have been used in the graph"):
        E.autograd.grad((x * 2).sum(), [x, E.ones(1, requires_grad=True)])


@case("is_grads_batched=True: a grad_output whose trailing shape is not the output's, a 0-d "
      "grad_output, and batches of different sizes are refused with torch's exception types",
      source=TORCH_BEHAVIOUR)
def is_grads_batched_errors(E):
    x = E.ones(2, requires_grad=True)
    z = x * 2
    kw = dict(is_grads_batched=True, retain_graph=True)
    with pytest.raises(RuntimeError, match="If `is_grads_batched=True`, we interpret the first "
                                           "dimension of each grad_output as the batch "
                                           "dimension"):
        E.autograd.grad(z, x, E.ones(3, 3), **kw)
    with pytest.raises(IndexError):
        E.autograd.grad(z, x, E.tensor(1.0), **kw)
    with pytest.raises(ValueError, match="Got in_dim=0 for some input, but that input is a "
                                         "Tensor of dimensionality 0"):
        E.autograd.grad(z.sum(), x, None, **kw)
    with pytest.raises(ValueError, match="Expected all tensors to have the same size in the "
                                         "mapped dimension"):
        E.autograd.grad([z, x * 3], x, [E.ones(2, 2), E.ones(3, 2)], **kw)
    (rows,) = E.autograd.grad(z, x, E.ones(4, 2), **kw)
    assert rows.tolist() == [[2.0, 2.0]] * 4


@case("During the backward pass (.backward()), only leaf tensors with requires_grad=True "
      "will have gradients accumulated into their .grad fields.", source=MECHANICS)
def backward_inputs_on_a_retained_non_leaf_accumulates_once(E):
    # torch: backward(inputs=[v]) on a non-leaf v retains v's grad (once, also
    # when v already retains it), and v keeps retaining it afterwards
    x = E.ones(2, requires_grad=True)
    v = x * 3
    v.retain_grad()
    (v * v).sum().backward(inputs=[v])
    assert v.grad.tolist() == [6.0, 6.0] and x.grad is None
    w = x * 3
    (w * w).sum().backward(inputs=[w], retain_graph=True)
    assert w.retains_grad and w.grad.tolist() == [6.0, 6.0]
    (w * w).sum().backward()
    assert w.grad.tolist() == [12.0, 12.0] and x.grad.tolist() == [18.0, 18.0]


@case("the .grad field is updated for Tensors that retain_grad", source=MECHANICS)
def retained_grad_is_filled_where_grad_stops(E):
    # torch fills a retained .grad also where grad() stops at the tensor's node
    # (the tensor is an input of grad(), or its output itself)
    x = E.ones(2, requires_grad=True)
    v = x * 3
    v.retain_grad()
    (g,) = E.autograd.grad((v * v).sum(), v)
    assert g.tolist() == [6.0, 6.0] and v.grad.tolist() == [6.0, 6.0]
    u = x * 3
    u.retain_grad()
    (g,) = E.autograd.grad(u, u, E.ones(2))
    assert g.tolist() == [1.0, 1.0] and u.grad.tolist() == [1.0, 1.0]
    s = x * 3
    s.retain_grad()
    grads = E.autograd.grad((s * 2).sum(), [s, x])
    assert [t.tolist() for t in grads] == [[2.0, 2.0], [6.0, 6.0]]
    assert s.grad.tolist() == [2.0, 2.0] and x.grad is None


@case("with create_graph=True a retained .grad is a copy recorded in the graph "
      "(CloneBackward0)", source=TORCH_BEHAVIOUR)
def retained_grad_under_create_graph_is_a_recorded_copy(E):
    x = E.ones(2, requires_grad=True)
    v = x * 3
    v.retain_grad()
    (v * v).sum().backward(create_graph=True)
    assert v.grad.tolist() == [6.0, 6.0] and v.grad.grad_fn.name() == "CloneBackward0"
    (gg,) = E.autograd.grad(v.grad.sum(), x)
    assert gg.tolist() == [6.0, 6.0]
