"""split, chunk and unbind: one node, one output per view.

PyTorch records these as one node (SplitBackward0, SplitWithSizesBackward0,
UnbindBackward0) whose output ``i`` is view ``i``; its backward fills the
gradient of a view that got none with zeros. Tensor hooks on a view that got
no gradient run with None.
"""
from __future__ import annotations

import pytest

from adcheck.conformance.case import AUTOGRAD_NOTE, MECHANICS, TORCH_BEHAVIOUR, case


def _x(E):
    return E.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=E.float64, requires_grad=True)


@case("The nodes, called Node represent the backward computations to be performed for a "
      "give elementary operation.", source=AUTOGRAD_NOTE)
def one_node_per_multi_view_op(E):
    x = _x(E)
    for views, name in ((x.split(1), "SplitBackward0"), (x.chunk(2), "SplitBackward0"),
                        (x.split([1, 2]), "SplitWithSizesBackward0"),
                        (x.unbind(1), "UnbindBackward0")):
        node = views[0].grad_fn
        assert node.name() == name
        assert all(v.grad_fn is node for v in views)
        assert [v.output_nr for v in views] == list(range(len(views)))
        assert [(fn is not None, nr) for fn, nr in node.next_functions] == [(True, 0)]


@case("the node of split saves dim, the input's sizes and split_size (split_sizes for "
      "SplitWithSizesBackward0); unbind's saves dim", source=TORCH_BEHAVIOUR)
def multi_view_node_saved_arguments(E):
    x = _x(E)
    node = x.split(2)[0].grad_fn
    assert (node._saved_dim, tuple(node._saved_self_sym_sizes), node._saved_split_size) == \
        (0, (3, 2), 2)
    node = x.split([1, 2])[0].grad_fn
    assert tuple(node._saved_split_sizes) == (1, 2)
    assert x.unbind(1)[0].grad_fn._saved_dim == 1


@case("A gradient of 0 (or independent) can be expressed in any of the following ways: "
      "A Tensor full of zeros", source=AUTOGRAD_NOTE)
def views_without_gradient_get_zeros(E):
    x = _x(E)
    a, b = x.split([1, 2])
    (a * 3).sum().backward()
    assert x.grad.tolist() == [[3.0, 3.0], [0.0, 0.0], [0.0, 0.0]]
    u = x.unbind(1)
    (g,) = E.autograd.grad((u[1] ** 2).sum(), x, create_graph=True)
    assert g.tolist() == [[0.0, 4.0], [0.0, 8.0], [0.0, 12.0]]
    (gg,) = E.autograd.grad(g.sum(), x)
    assert gg.tolist() == [[0.0, 2.0]] * 3


@case("a tensor hook on a view that got no gradient runs with None (hooks on one node run "
      "in registration order); returning a tensor in place of None is refused",
      source=TORCH_BEHAVIOUR)
def hook_on_view_without_gradient_gets_none(E):
    x = E.ones(4, dtype=E.float64, requires_grad=True)
    p, q = x.split(2)
    calls = []
    q.register_hook(lambda g: calls.append(("q", g)))
    p.register_hook(lambda g: calls.append(("p", None if g is None else g.tolist())))
    p.sum().backward()
    assert calls == [("q", None), ("p", [1.0, 1.0])]
    p, q = x.split(2)
    q.register_hook(lambda g: E.ones(2, dtype=E.float64))
    with pytest.raises(RuntimeError, match="can't replace a None gradient with a non-None value"):
        p.sum().backward()


@case("If multiple hooks of the same type are registered on the same Tensor or Node they "
      "are executed in the order in which they are registered.", source=MECHANICS)
def node_hooks_of_a_multi_view_node_see_every_output(E):
    x = E.ones(4, dtype=E.float64, requires_grad=True)
    p, _ = x.split(2)
    seen = []
    p.grad_fn.register_prehook(lambda go: seen.append(("pre", [g is None for g in go])))
    p.grad_fn.register_hook(lambda gi, go: seen.append(("post", [g is None for g in go])))
    p.sum().backward()
    assert seen == [("pre", [False, True]), ("post", [False, True])]


def _returning(E, make):
    class Views(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return make(ctx, x)

        @staticmethod
        def backward(ctx, *grads):
            return None
    return Views


@case("the views returned by a recorded custom Function with more than one differentiable "
      "output are multi-output views: writing to one in place, or through its base, gives the "
      "multiple-views message; with one differentiable output, or unrecorded, it is the custom "
      "Function message", source=TORCH_BEHAVIOUR)
def custom_function_views_among_several_outputs(E):
    multi = ("is a view and is being modified inplace. This view is the output of a function "
             "that returns multiple views.")
    custom = "This view was created inside a custom Function"
    x = E.ones(2, dtype=E.float64, requires_grad=True) * 1
    for make in (lambda ctx, t: (t[:1], t[1:]), lambda ctx, t: (t[:1], t * 2),
                 lambda ctx, t: tuple(t.unbind(0)), lambda ctx, t: (t, t)):
        a, b = _returning(E, make).apply(x)
        with pytest.raises(RuntimeError) as info:
            a.mul_(2)
        assert str(info.value).startswith("Output 0 of Views " + multi)
        assert a.grad_fn.name() == "ViewsBackward"
    a, _ = _returning(E, lambda ctx, t: (t[:1], t[1:])).apply(x)
    with pytest.raises(RuntimeError, match="its base or another view of its base has been "
                                           "modified inplace. This view is the output of a "
                                           "function that returns multiple views"):
        x.mul_(2)
        a * 1
    y = E.ones(2, dtype=E.float64, requires_grad=True) * 1
    # one differentiable output (an integer tensor or a non-differentiable one is not counted)
    for make in (lambda ctx, t: (t[:1], E.ones(2, dtype=E.int64)[:1]),
                 lambda ctx, t: (ctx.mark_non_differentiable(v := t[1:]), (t[:1], v))[1]):
        a, b = _returning(E, make).apply(y)
        with pytest.raises(RuntimeError, match=custom):
            a.mul_(2)
    # the non-differentiable view carries the custom-Function advice after the no_grad one
    w = E.ones(1, dtype=E.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode and is being "
                                           "modified inplace with grad mode enabled. " + custom):
        b.mul_(w)
    a, b = _returning(E, lambda ctx, t: (t[:1], t[1:])).apply(E.ones(2, dtype=E.float64))
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode and is being "
                                           "modified inplace with grad mode enabled. " + custom):
        a.mul_(w)
