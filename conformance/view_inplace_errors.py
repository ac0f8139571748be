"""In-place writes to views that PyTorch refuses, in PyTorch's words.

A view remembers how it was made (in no_grad mode, in inference mode, as one
of several outputs, by a custom Function); an in-place write to it, or to its
base once the view is used again, is refused when that origin makes the
gradient ambiguous. The seeds state the principle (no error means correct
gradients); the messages users search for are torch's, checked here verbatim.
"""
from __future__ import annotations

import pytest

from adcheck.conformance.case import AUTOGRAD_NOTE, MECHANICS, TORCH_BEHAVIOUR, case

_NO_GRAD_ADVICE = (
    "Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify "
    "your code by moving both the view and the inplace either both inside the no_grad block "
    "(if you don't want the inplace to be tracked) or both outside (if you want the inplace "
    "to be tracked).")
_INFERENCE_ADVICE = _NO_GRAD_ADVICE.replace("the no_grad block", "the inference_mode block")
_MULTI_ADVICE = (
    "This view is the output of a function that returns multiple views. Such functions do "
    "not allow the output views to be modified inplace. You should replace the inplace "
    "operation by an out-of-place one.")
_VIEW_OF_LEAF = ("a view of a leaf Variable that requires grad is being used in an in-place "
                 "operation.")


def _refused(action) -> str:
    with pytest.raises(RuntimeError) as info:
        action()
    return str(info.value)


def _nonleaf(E, n=4):
    return E.ones(n, dtype=E.float64, requires_grad=True) * 1


@case("This ensures that if you're using in-place functions and not seeing any errors, you "
      "can be sure that the computed gradients are correct.", source=MECHANICS)
def view_made_before_its_leaf_requires_grad_refuses_inplace(E):
    x = E.ones(3, dtype=E.float64)
    v = x[:2]
    x.requires_grad_()
    assert v.requires_grad and v.grad_fn is None and v.is_leaf
    assert _refused(lambda: v.mul_(2)) == _VIEW_OF_LEAF


@case("a view requires grad when its base does, even a view made before the base required "
      "grad or in no_grad mode; such a view has no grad_fn, and no gradient flows through "
      "it", source=TORCH_BEHAVIOUR)
def view_requires_grad_through_its_base(E):
    x = E.ones(4, dtype=E.float64, requires_grad=True)
    with E.no_grad():
        v = x[:2]
    assert v.requires_grad and v.grad_fn is None
    y = v * 2
    assert y.requires_grad and [fn for fn, _ in y.grad_fn.next_functions] == [None, None]
    y.sum().backward()
    assert x.grad is None


@case("torch.no_grad simply prevents any Node from being added to the graph.",
      source=AUTOGRAD_NOTE)
def split_views_made_in_no_grad_refuse_inplace(E):
    x = E.ones(4, dtype=E.float64, requires_grad=True)
    with E.no_grad():
        a, _ = x.split(2)
        u = x.unbind()
    for view in (a, u[1]):
        message = _refused(lambda: view.mul_(2))
        assert message == ("A view was created in no_grad mode and is being modified inplace "
                           "with grad mode enabled. " + _NO_GRAD_ADVICE)


@case("an in-place write, recorded because another input requires grad, to one of several "
      "views (split) of a tensor that does not require grad is refused: 'A view was created "
      "in no_grad mode' followed by the multiple-views advice", source=TORCH_BEHAVIOUR)
def multiple_views_without_grad_fn_message(E):
    a, _ = E.ones(4, dtype=E.float64).chunk(2)
    w = E.ones(2, dtype=E.float64, requires_grad=True)
    assert _refused(lambda: a.mul_(w)) == (
        "A view was created in no_grad mode and is being modified inplace with grad mode "
        "enabled. " + _MULTI_ADVICE)


@case("an in-place write to one of the views returned by split, chunk or unbind is refused, "
      "naming the output and the op: 'Output 1 of Unbind is a view and is being modified "
      "inplace.'", source=TORCH_BEHAVIOUR)
def multiple_views_message_names_output_and_op(E):
    y = _nonleaf(E, 6)
    cases = [(lambda: y.unbind()[1], "Output 1 of Unbind"),
             (lambda: y.split(2)[2], "Output 2 of Split"),
             (lambda: y.chunk(3)[1], "Output 1 of Split"),
             (lambda: y.split([2, 4])[1], "Output 1 of SplitWithSizes")]
    for make, where in cases:
        view = make()
        assert _refused(lambda: view.add_(1)) == (
            f"{where} is a view and is being modified inplace. " + _MULTI_ADVICE)


@case("a view of one of several views keeps the restriction, named after its own op: "
      "'Output 0 of Slice is a view and is being modified inplace.'", source=TORCH_BEHAVIOUR)
def view_of_a_multiple_view_is_refused(E):
    a, _ = _nonleaf(E).split(2)
    w = a[:1]
    assert _refused(lambda: w.mul_(2)) == (
        "Output 0 of Slice is a view and is being modified inplace. " + _MULTI_ADVICE)


@case("a view (with a grad_fn) of a view made in no_grad mode is refused with 'Output 0 of "
      "Slice is a view of a view which was created in no_grad mode'", source=TORCH_BEHAVIOUR)
def view_of_a_view_made_in_no_grad(E):
    y = _nonleaf(E)
    with E.no_grad():
        v = y[:3]
    w = v[:2]
    assert w.grad_fn is not None
    assert _refused(lambda: w.mul_(2)) == (
        "Output 0 of Slice is a view of a view which was created in no_grad mode and is being "
        "modified inplace with grad mode enabled. " + _NO_GRAD_ADVICE)


@case("a view made in inference mode of a normal tensor, written in place in normal mode, is "
      "refused with the inference-mode words (and so is a view of it)", source=TORCH_BEHAVIOUR)
def view_made_in_inference_mode(E):
    y = _nonleaf(E)
    with E.inference_mode():
        v = y[:3]
        a, _ = y.split(2)
    w = v[:2]
    assert _refused(lambda: v.mul_(2)) == (
        "A view was created in inference mode and is being modified inplace in normal mode. "
        + _INFERENCE_ADVICE)
    assert _refused(lambda: a.mul_(2)).startswith("A view was created in inference mode")
    assert _refused(lambda: w.mul_(2)) == (
        "Output 0 of Slice is a view of a view which was created in inference mode and is "
        "being modified inplace in normal mode. " + _INFERENCE_ADVICE)


@case("a view made in inference mode stays so under a later no_grad view of it: the "
      "inference-mode origin wins", source=TORCH_BEHAVIOUR)
def inference_origin_outlives_no_grad(E):
    y = _nonleaf(E)
    with E.inference_mode():
        v = y[:3]
    with E.no_grad():
        w = v[:2]
    assert _refused(lambda: w.mul_(2)).startswith("A view was created in inference mode")


@case("once the base of a view made in no_grad mode (or of one of several views) is "
      "modified in place, using the view is refused: 'its base or another view of its base "
      "has been modified inplace'", source=TORCH_BEHAVIOUR)
def base_written_then_restricted_view_used(E):
    y = _nonleaf(E)
    with E.no_grad():
        v = y[:2]
    a, _ = y.split(2)
    y.mul_(2)
    assert v.requires_grad
    assert _refused(lambda: v.grad_fn) == (
        "A view was created in no_grad mode and its base or another view of its base has been "
        "modified inplace with grad mode enabled. " + _NO_GRAD_ADVICE)
    assert _refused(lambda: v * 2).startswith("A view was created in no_grad mode")
    assert _refused(lambda: a.grad_fn) == (
        "Output 0 of Split is a view and its base or another view of its base has been "
        "modified inplace. " + _MULTI_ADVICE)


@case("a view's grad_fn is regenerated (AsStridedBackward0) whenever its base's version "
      "moved, even by a write not recorded (no_grad mode, a detached alias)",
      source=TORCH_BEHAVIOUR)
def view_regenerates_after_unrecorded_write(E):
    x = E.ones(4, dtype=E.float64, requires_grad=True)
    v = x[:2]
    with E.no_grad():
        x.mul_(2)
    assert v.grad_fn.name() == "AsStridedBackward0"
    (v * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0, 0.0, 0.0]
    late = E.ones(4, dtype=E.float64)
    w = late[:2]
    late.requires_grad_()
    w.detach().mul_(2)
    assert w.grad_fn.name() == "AsStridedBackward0"
