"""Custom Functions that modify inputs in place: ``mark_dirty`` and its checks.

The Function wrapper manages the version counter from what ``mark_dirty``
says; PyTorch also refuses the in-place writes whose gradient it could not
get right (a leaf, a view of a leaf, a view whose kind forbids it, a dirty
view among several outputs), and a jvp that does not update the tangent of
the input it modified.
"""
from __future__ import annotations

import warnings

import pytest

from adcheck.conformance.case import AUTOGRAD_NOTE, TORCH_BEHAVIOUR, case


def _dirty(E, outputs=1, jvp=None):
    """A Function doubling its input in place (and returning ``outputs`` values)."""
    class Double(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x if outputs == 1 else (x,) + (x * 1,) * (outputs - 1)

        @staticmethod
        def backward(ctx, g, *rest):
            return g * 2

    if jvp is not None:
        Double.jvp = staticmethod(jvp)
    return Double


def _refused(action) -> str:
    with pytest.raises(RuntimeError) as info:
        action()
    return str(info.value)


@case("The Function wrapper takes care of managing this version by using the information "
      "provided by the .mark_dirty() method available on the context.", source=AUTOGRAD_NOTE)
def dirty_input_is_rebased_and_bumped(E):
    x = E.ones(4, dtype=E.float64, requires_grad=True)
    y = x * 1
    v = y[:2]
    out = _dirty(E).apply(v)
    assert out is v and y._version == 2      # the write, then mark_dirty
    assert v.grad_fn.name() == "AsStridedBackward0"
    assert "CopySlices" in y.grad_fn.name()
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 1.0, 1.0]


@case("a Function that modifies in place a leaf that requires grad is refused ('has been "
      "used'), and so is a view of such a leaf ('is being used'); a view made in no_grad "
      "mode has no grad_fn of its own and counts as a leaf", source=TORCH_BEHAVIOUR)
def dirty_leaf_and_view_of_leaf_refused(E):
    leaf = "a leaf Variable that requires grad has been used in an in-place operation."
    x = E.ones(4, dtype=E.float64, requires_grad=True)
    assert _refused(lambda: _dirty(E).apply(x)) == leaf
    assert _refused(lambda: _dirty(E).apply(x[:2])) == (
        "a view of a leaf Variable that requires grad is being used in an in-place operation.")
    y = x * 1
    with E.no_grad():
        v = y[:2]
    assert _refused(lambda: _dirty(E).apply(v)) == leaf


@case("a Function that modifies in place one of several views (split) is refused with the "
      "multiple-views message", source=TORCH_BEHAVIOUR)
def dirty_multiple_view_refused(E):
    a, _ = (E.ones(4, dtype=E.float64, requires_grad=True) * 1).split(2)
    assert _refused(lambda: _dirty(E).apply(a)).startswith(
        "Output 0 of Split is a view and is being modified inplace.")


@case("mark_dirty validation: a dirty tensor that is not returned is refused (recorded or "
      "not); a dirty view with more than one output is refused; a dirty tensor that is not an "
      "input gives a UserWarning", source=TORCH_BEHAVIOUR)
def mark_dirty_validation(E):
    class NotReturned(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g

    class NotInput(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 2
            ctx.mark_dirty(y)
            return y

        @staticmethod
        def backward(ctx, g):
            return g

    for x in (E.ones(2), E.ones(2, requires_grad=True) * 1):
        assert _refused(lambda: NotReturned.apply(x)) == (
            "Some elements marked as dirty during the forward method were not returned as "
            "output. The inputs that are modified inplace must all be outputs of the Function.")
    v = (E.ones(4, dtype=E.float64, requires_grad=True) * 1)[:2]
    assert _refused(lambda: _dirty(E, outputs=2).apply(v)).startswith(
        "If your Function modifies inplace an input that is a view of another Tensor, your "
        "Function cannot return more than one Tensor.")
    assert len(_dirty(E, outputs=2).apply(E.ones(4)[:2])) == 2   # not recorded: allowed
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        NotInput.apply(E.ones(2, requires_grad=True))
    assert [w.category for w in caught] == [UserWarning]
    assert str(caught[0].message).startswith(
        "ctx.mark_dirty() received a tensor that was not an input. Only input Tensors that "
        "have been mutated should be passed to ctx.mark_dirty().")


@case("a view returned by a custom Function refuses in-place writes (its backward would be "
      "bypassed), even when the call was not recorded", source=TORCH_BEHAVIOUR)
def custom_function_view_refuses_inplace(E):
    class Head(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x[:2]

        @staticmethod
        def backward(ctx, g):
            return None

    advice = ("This view was created inside a custom Function (or because an input was "
              "returned as-is) and the autograd logic to handle view+inplace would override "
              "the custom backward associated with the custom Function, leading to incorrect "
              "gradients. This behavior is forbidden. You can fix this by cloning the output "
              "of the custom Function.")
    recorded = Head.apply(E.ones(4, dtype=E.float64, requires_grad=True) * 1)
    assert _refused(lambda: recorded.mul_(2)) == (
        "Output 0 of Head is a view and is being modified inplace. " + advice)
    unrecorded = Head.apply(E.ones(4, dtype=E.float64))
    w = E.ones(2, dtype=E.float64, requires_grad=True)
    assert _refused(lambda: unrecorded.mul_(w)) == (
        "A view was created in no_grad mode and is being modified inplace with grad mode "
        "enabled. " + advice)


@case("a custom jvp of a Function that modifies an input in place must modify that input's "
      "tangent in place and return it; forward runs without the tangents",
      source=TORCH_BEHAVIOUR)
def dirty_jvp_updates_the_tangent_in_place(E):
    fwAD = E.autograd.forward_ad

    def in_place(ctx, t):
        t.mul_(2)
        return t

    with fwAD.dual_level():
        x = fwAD.make_dual(E.ones(2, dtype=E.float64), E.ones(2, dtype=E.float64))
        out = _dirty(E, jvp=in_place).apply(x)
        assert fwAD.unpack_dual(out).tangent.tolist() == [2.0, 2.0]
        y = fwAD.make_dual(E.ones(2, dtype=E.float64), E.ones(2, dtype=E.float64))
        message = _refused(lambda: _dirty(E, jvp=lambda ctx, t: t * 2).apply(y))
    assert message == ("An inplace custom Function is not modifying the forward mode gradients "
                       "inplace. If the forward is modifying an input inplace, then the jvp "
                       "function must modify the corresponding gradient inplace.")


@case("a recorded Function that marks dirty a view it made itself (not an input) is refused "
      "with the not-an-input message, after the leaf check and before any view check; a plain "
      "tensor that is not an input only warns", source=TORCH_BEHAVIOUR)
def dirty_view_that_is_not_an_input_refused(E):
    def marking(make, outputs=1):
        class MarkOther(E.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = make(x)
                ctx.mark_dirty(y)
                return y if outputs == 1 else (y, x * 3)

            @staticmethod
            def backward(ctx, g, *rest):
                return g
        return MarkOther

    refused = ("ctx.mark_dirty() received a tensor that was not an input. Only input Tensors "
               "that have been mutated should be passed to ctx.mark_dirty().")
    for x in (E.ones(2, requires_grad=True), E.ones(3, requires_grad=True)[:2] * 1):
        assert _refused(lambda: marking(lambda t: (t * 2)[:1]).apply(x)) == refused
        assert _refused(lambda: marking(lambda t: E.ones(2)[:1], outputs=2).apply(x)) == refused
        # a leaf that requires grad is refused as a leaf first, with no warning
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert _refused(lambda: marking(
                lambda t: E.ones(2, requires_grad=True)).apply(x)).startswith(
                "a leaf Variable that requires grad has been used in an in-place operation.")
        assert caught == []
    # not recorded: nothing is checked
    assert marking(lambda t: (t * 2)[:1]).apply(E.ones(2)).tolist() == [2.0]
