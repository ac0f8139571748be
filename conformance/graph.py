"""The recorded graph: grad_fn, next_functions, leaves, requires_grad, .grad."""
from __future__ import annotations

import warnings

import pytest

from adcheck.conformance.case import AUTOGRAD_NOTE, MECHANICS, case
from adcheck.conformance.compare import assert_close


def _f64(E, data, requires_grad=False):
    return E.tensor(data, dtype=E.float64, requires_grad=requires_grad)


@case("Note the particularly interesting case where f's output is a scalar value "
      "because providing a vector v containing the value 1 will compute exactly J_f.",
      source=AUTOGRAD_NOTE)
def scalar_output_backward_gives_gradient(E):
    x = _f64(E, [1.0, -2.0, 3.0], requires_grad=True)
    (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, -4.0, 6.0]


@case("given an arbitrary vector v of size O, will compute v^T J_f.",
      source=AUTOGRAD_NOTE)
def backward_computes_vector_jacobian_product(E):
    a = _f64(E, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    x = _f64(E, [1.0, 1.0, 1.0], requires_grad=True)
    v = _f64(E, [10.0, -1.0])
    (a @ x).backward(v)
    assert x.grad.tolist() == [6.0, 15.0, 24.0]


@case("if we split f into two elementary operations, namely y = op_2(op_1(x)), the "
      "automatic differentiation will compute v^T J_f = (v^T J_{op_2}) J_{op_1}",
      source=AUTOGRAD_NOTE)
def chain_rule_composes_elementary_operations(E):
    x = _f64(E, [0.5, -1.0], requires_grad=True)
    v = _f64(E, [2.0, 3.0])
    E.sin(E.exp(x)).backward(v)
    expected = v * E.cos(E.exp(x.detach())) * E.exp(x.detach())
    assert_close(x.grad, expected, rtol=1e-12)


@case("the .grad_fn attribute of each torch.Tensor is an entry point into this graph",
      source=MECHANICS)
def grad_fn_is_the_entry_point(E):
    x = E.ones(3, requires_grad=True)
    y = x * 2
    z = y.exp()
    assert x.grad_fn is None and y.grad_fn is not None and z.grad_fn is not None
    assert z.grad_fn.next_functions[0][0] is y.grad_fn
    assert isinstance(z.grad_fn.name(), str) and z.grad_fn.name()


@case("The edges link a given Node to all the Node s that created the inputs of the "
      "elementary operation it represents.", source=AUTOGRAD_NOTE)
def next_functions_link_to_input_creators(E):
    x = E.ones(2, requires_grad=True)
    a, b = x * 2, x + 1
    c = E.ones(2)
    z = a * b
    assert [fn for fn, _ in z.grad_fn.next_functions] == [a.grad_fn, b.grad_fn]
    w = a * c
    first, second = w.grad_fn.next_functions
    assert first[0] is a.grad_fn and second[0] is None
    leaf_edge = a.grad_fn.next_functions[0][0]
    assert leaf_edge is not None and leaf_edge.next_functions == ()


@case("You can access the Node that created a given Tensor (if the Tensor requires "
      "gradients and is not a leaf Tensor) using the .grad_fn field.",
      source=AUTOGRAD_NOTE)
def leaves_have_no_grad_fn(E):
    x = E.ones(2, requires_grad=True)
    c = E.ones(2)
    assert x.is_leaf and x.grad_fn is None
    assert c.is_leaf and c.grad_fn is None
    y = x * c
    assert not y.is_leaf and y.grad_fn is not None


@case("the graph is recreated from scratch at every iteration, and this is exactly what "
      "allows for using arbitrary Python control flow statements",
      source=MECHANICS)
def graph_follows_python_control_flow(E):
    def f(x):
        return x * x if x.sum().item() > 0 else x * 3
    for value, grad in ((2.0, 4.0), (-2.0, 3.0), (1.5, 3.0)):
        x = _f64(E, [value], requires_grad=True)
        f(x).sum().backward()
        assert x.grad.tolist() == [grad]


@case("requires_grad is a flag, defaulting to false unless wrapped in a nn.Parameter",
      source=MECHANICS)
def requires_grad_defaults_to_false(E):
    assert E.ones(2).requires_grad is False
    assert E.tensor([1.0]).requires_grad is False
    assert E.tensor([1.0], requires_grad=True).requires_grad is True


@case("During the forward pass, an operation is only recorded in the backward graph if "
      "at least one of its input tensors require grad.", source=MECHANICS)
def operation_recorded_only_if_an_input_requires_grad(E):
    a, b = E.ones(2), E.ones(2) * 3
    c = a * b
    assert c.requires_grad is False and c.grad_fn is None
    x = E.ones(2, requires_grad=True)
    d = a * x
    assert d.requires_grad is True and d.grad_fn is not None


@case("During the backward pass (.backward()), only leaf tensors with requires_grad=True "
      "will have gradients accumulated into their .grad fields.", source=MECHANICS)
def only_leaves_accumulate_grad(E):
    x = E.ones(2, requires_grad=True)
    c = E.ones(2)
    y = x * 2
    (y * c).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    assert c.grad is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns on .grad of a non-leaf
        assert y.grad is None


@case("From this definition, it is clear that all non-leaf tensors will automatically "
      "have require_grad=True.", source=MECHANICS)
def non_leaves_require_grad(E):
    x = E.ones(2, requires_grad=True)
    for y in (x * 2, x.exp(), x[0], x.sum(), x + E.ones(2)):
        assert y.requires_grad is True and y.is_leaf is False


@case("It is important to note that even though every tensor has this flag, setting it "
      "only makes sense for leaf tensors", source=MECHANICS)
def requires_grad_cannot_be_unset_on_non_leaf(E):
    x = E.ones(2, requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match="only change requires_grad flags of leaf variables"):
        y.requires_grad_(False)
    leaf = E.ones(2)
    leaf.requires_grad_()
    assert leaf.requires_grad and leaf.is_leaf
    leaf.requires_grad_(False)
    assert not leaf.requires_grad


@case("To freeze parts of your model, simply apply .requires_grad_(False) to the "
      "parameters that you don't want updated.", source=MECHANICS)
def frozen_leaf_gets_no_grad(E):
    w1 = E.ones(2, requires_grad=True)
    w2 = E.ones(2, requires_grad=True)
    w1.requires_grad_(False)
    h = w1 * 3
    assert h.grad_fn is None
    (h * w2).sum().backward()
    assert w1.grad is None
    assert w2.grad.tolist() == [3.0, 3.0]


@case("During the backward pass (.backward()), only leaf tensors with requires_grad=True "
      "will have gradients accumulated into their .grad fields.", source=MECHANICS)
def grad_accumulates_across_backward_calls(E):
    x = _f64(E, [1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    (x * 3).sum().backward()
    assert x.grad.tolist() == [5.0, 7.0]
    x.grad = None
    (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


@case("the .grad field is updated for Tensors that retain_grad", source=MECHANICS)
def retain_grad_populates_non_leaf_grad(E):
    x = _f64(E, [1.0, 2.0], requires_grad=True)
    y = x * 3
    assert y.retains_grad is False
    y.retain_grad()
    assert y.retains_grad is True
    (y * y).sum().backward()
    assert y.grad.tolist() == [6.0, 12.0]
    assert x.grad.tolist() == [18.0, 36.0]


@case("A gradient of 0 (or independent) can be expressed in any of the following ways: "
      "A Tensor full of zeros; In python, a None Tensor; ... Using "
      "autograd.grad(allow_unused=False), an error stating that the output is "
      "independent of the input", source=AUTOGRAD_NOTE)
def unused_input_gradient_representations(E):
    x = E.ones(2, requires_grad=True)
    unused = E.ones(3, requires_grad=True)
    out = (x * 2).sum()
    gx, gu = E.autograd.grad(out, [x, unused], allow_unused=True, retain_graph=True)
    assert gx.tolist() == [2.0, 2.0] and gu is None
    _, gz = E.autograd.grad(out, [x, unused], materialize_grads=True, retain_graph=True)
    assert gz.tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        E.autograd.grad(out, [x, unused], retain_graph=True)
    out.backward()
    assert unused.grad is None


@case("Autograd will error out to the user similar to what call backward() twice with "
      "out retain_graph=True, and let the user know they should use retain_graph=True.",
      source=MECHANICS)
def second_backward_needs_retain_graph(E):
    x = E.ones(2, requires_grad=True)
    out = (x.exp() * x).sum()
    out.backward(retain_graph=True)
    out.backward()
    assert_close(x.grad, 2 * 2 * E.exp(E.ones(2)), rtol=1e-6)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        out.backward()


@case("If you are using torch.autograd.backward, all of the above mentioned hooks will be "
      "executed, whether or not you specified the inputs argument.", source=MECHANICS)
def backward_inputs_restricts_accumulation(E):
    a = E.ones(2, requires_grad=True)
    b = E.ones(2, requires_grad=True)
    (a * b * 3).sum().backward(inputs=[a])
    assert a.grad.tolist() == [3.0, 3.0] and b.grad is None
    E.autograd.backward([(a * b).sum()], inputs=[b])
    assert b.grad.tolist() == [1.0, 1.0] and a.grad.tolist() == [3.0, 3.0]


@case("When computing the forward pass, autograd simultaneously performs the requested "
      "computations and builds up a graph representing the function that computes the "
      "gradient", source=MECHANICS)
def create_graph_records_the_backward(E):
    x = _f64(E, [2.0], requires_grad=True)
    y = x ** 3
    (g,) = E.autograd.grad(y, x, create_graph=True)
    assert g.requires_grad and g.grad_fn is not None
    assert g.tolist() == [12.0]
    (gg,) = E.autograd.grad(g, x)
    assert gg.tolist() == [12.0]
