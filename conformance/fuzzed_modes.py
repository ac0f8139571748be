"""The last classes the differential fuzzer (tests/fuzz, docs/fuzzing.md) found
refengine getting differently from torch 2.13, one case per class.

Inference tensors that require grad used outside inference mode, a double
backward through an in-place op on a view, and the errors and values met at
the edges (empty reductions, negative zero, the repr of a view that refuses
its grad_fn).
"""
from __future__ import annotations

import math
import re

import pytest

from adcheck.conformance.case import TORCH_BEHAVIOUR, case


def _f64(E, values, **kw):
    return E.tensor(values, dtype=E.float64, **kw)


def _frozen_leaf(E):
    """A tensor made in inference mode and then asked to require grad there."""
    with E.inference_mode():
        a = _f64(E, [1.5, 2.0])
        a.requires_grad_()
    return a


@case("outside inference mode, an op whose tensors are all inference tensors is not "
      "recorded, even when one of them requires grad (an inference tensor has no autograd "
      "key); a normal tensor among them, a number wrapped as one, or clone records it",
      source=TORCH_BEHAVIOUR)
def ops_on_inference_tensors_that_require_grad(E):
    a = _frozen_leaf(E)
    assert a.requires_grad and a.is_inference()
    for result in (E.acosh(a), a + a, a.sum(0), a ** 2, E.clamp(a, min=0.0), a[0], a.t()):
        assert not result.requires_grad and result.grad_fn is None
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        E.sin(a).sum().backward()
    assert (a * 2).grad_fn is not None
    w = _f64(E, [1.0, 1.0], requires_grad=True)
    (a.clone() * 3 + w).sum().backward()
    assert a.grad.tolist() == [3.0, 3.0] and w.grad.tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        a * w


@case("the result an in-place op on a view saves has the view's history after the write "
      "(through the base's CopySlices), so a double backward through it reaches the leaf",
      source=TORCH_BEHAVIOUR)
def double_backward_through_an_inplace_op_on_a_view(E):
    x = _f64(E, [[0.5, 1.0], [2.0, -1.0]], requires_grad=True)
    y = x * 1
    view = y.t()
    view.exp_()
    g, = E.autograd.grad((y * y).sum(), [x], create_graph=True)
    e = [math.exp(v) for row in x.tolist() for v in row]
    # g = 2 exp(2x), so d/dx sum(g^2) = 16 exp(4x)
    assert g.reshape(-1).tolist() == pytest.approx([2 * v * v for v in e], rel=1e-12)
    (g * g).sum().backward()
    assert x.grad.reshape(-1).tolist() == pytest.approx([16 * v ** 4 for v in e], rel=1e-12)


@case(".real and .imag of a complex tensor are select() views of view_as_real: their "
      "grad_fn is SelectBackward0, and the error for writing one of them names Select",
      source=TORCH_BEHAVIOUR)
def real_and_imag_are_select_views(E):
    z = E.tensor([[2 - 1j, -1 - 1j], [0.5 + 0j, 2 - 2j]], dtype=E.complex128,
                 requires_grad=True) * 1
    assert z.real.grad_fn.name() == z.imag.grad_fn.name() == "SelectBackward0"
    part = z.split(1)[0].real
    with pytest.raises(RuntimeError, match="Output 0 of Select is a view and is being modified "
                                           "inplace. This view is the output of a function "
                                           "that returns multiple views"):
        part.add_(1.0)


@case("amax, amin, max(dim) and min(dim) over an empty dim raise torch's IndexError naming "
      "the dim (amax as given, max(dim) non-negative); a view whose grad_fn is refused "
      "prints grad_fn=<Invalid>", source=TORCH_BEHAVIOUR)
def empty_dims_and_the_repr_of_a_refused_view(E):
    empty = E.ones(0, 2, dtype=E.float64)
    for call, text in ((lambda: empty.amax(0), "amax(): Expected reduction dim 0 "),
                       (lambda: empty.amin(-2), "amin(): Expected reduction dim -2 "),
                       (lambda: empty.max(-2), "max(): Expected reduction dim 0 "),
                       (lambda: empty.min(0), "min(): Expected reduction dim 0 ")):
        with pytest.raises(IndexError, match=re.escape(text + "to have non-zero size.")):
            call()
    assert empty.amax(1).shape == (0,)
    x = E.ones(3, dtype=E.float64, requires_grad=True) * 1
    piece = x.split(1)[0]
    x.add_(1)
    assert repr(piece).endswith("dtype=" + repr(E.float64) + ", grad_fn=<Invalid>)")


@case("x ** p with a number p of 0.5, -0.5, -1, 2, 3 or -2 is computed as sqrt, 1 / sqrt, "
      "1 / x, x * x, ...: (-0.0) ** -0.5 is -inf, the sign of 1 / sqrt(-0.0); a tensor "
      "exponent goes through pow: +inf", source=TORCH_BEHAVIOUR)
def number_powers_take_the_sign_of_zero_of_their_kernel(E):
    zero = E.tensor([-0.0, 0.0], dtype=E.float64)
    assert (zero ** -0.5).tolist() == [-math.inf, math.inf]
    assert (zero ** 0.5).tolist() == [0.0, 0.0] and math.copysign(1, (zero ** 0.5)[0].item()) < 0
    assert E.pow(zero, E.tensor(-0.5, dtype=E.float64)).tolist() == [math.inf, math.inf]
    assert (E.tensor(-math.inf, dtype=E.float64) ** -0.5).isnan().item()
    x = _f64(E, [-0.0], requires_grad=True)
    (x ** 0.5).sum().backward()
    # d/dx x ** 0.5 = 0.5 * x ** -0.5 = 0.5 / sqrt(-0.0)
    assert x.grad.tolist() == [-math.inf]


@case("relu's gradient is threshold_backward of the result: the gradient of a gradient "
      "through relu requires grad (its edge to the result carries zeros), so a double "
      "backward runs and gives zeros", source=TORCH_BEHAVIOUR)
def gradient_through_relu_has_a_graph(E):
    x = _f64(E, [-2.0, 0.5, 3.0], requires_grad=True)
    g, = E.autograd.grad(E.relu(x * 1).sum(), [x], create_graph=True)
    assert g.tolist() == [0.0, 1.0, 1.0]
    assert g.requires_grad and g.grad_fn is not None
    (g * g).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]


@case("cumprod's gradient of input i reads only the outputs k >= i: a NaN gradient of an "
      "earlier output does not reach it; max() of a tensor with NaN sends its gradient to "
      "the NaN elements, evenly", source=TORCH_BEHAVIOUR)
def nan_gradients_reach_only_what_they_depend_on(E):
    x = _f64(E, [2.0, 3.0], requires_grad=True)
    E.cumprod(x, 0).backward(_f64(E, [math.nan, 1.0]))
    # d out_1 / d x_1 = x_0 = 2; out_0 (gradient NaN) does not read x_1
    assert math.isnan(x.grad[0].item()) and x.grad[1].item() == 2.0
    y = _f64(E, [1.0, math.nan, 2.0, math.nan], requires_grad=True)
    (y.max() * 3).backward()
    assert y.grad.tolist() == [0.0, 1.5, 0.0, 1.5]


@case("a tensor that the formulas of several inputs read (maximum's self and other) is "
      "saved even when no input has an edge: with a no_grad view that requires grad and an "
      "inference tensor, maximum refuses to save the inference tensor", source=TORCH_BEHAVIOUR)
def tensors_read_by_several_formulas_are_always_saved(E):
    x = E.ones(2, 3, dtype=E.float64, requires_grad=True) * 1
    with E.no_grad():
        view = x[1:]
    with E.inference_mode():
        frozen = x * 2
    assert view.requires_grad and view.grad_fn is None and frozen.is_inference()
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        E.maximum(view, frozen)


@case("forward mode: an input without a tangent adds no term to xlogy's tangent (no "
      "0 * self / other, NaN at 0 / 0), and copy_ of an expanded dual tensor onto itself is "
      "allowed and keeps its tangent", source=TORCH_BEHAVIOUR)
def tangents_of_an_input_without_one(E):
    fw = E.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(_f64(E, [0.0, 2.0]), _f64(E, [-0.5, 3.0]))
        y = E.xlogy(x, _f64(E, [0.0, 4.0]))
        # d/dx x log(y) = log(y), 0 where x == 0 and y <= 0
        assert fw.unpack_dual(y).tangent.tolist() == [0.0, 3.0 * math.log(4.0)]
        v = fw.make_dual(_f64(E, 1.5), _f64(E, 0.25)).unsqueeze(0).expand(2)
        v.copy_(v)
        assert v.tolist() == [1.5, 1.5] and fw.unpack_dual(v).tangent.tolist() == [0.25, 0.25]


@case("forward mode: amax's tangent takes the tangents of the maxima only (an inf tangent "
      "elsewhere makes no NaN), and a view's tangent, once read, stays after its base's "
      "tangent is gone (base.detach_())", source=TORCH_BEHAVIOUR)
def tangents_of_maxima_and_of_views_once_read(E):
    fw = E.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(_f64(E, [[0.5, 2.0], [-1.0, 3.0]]),
                         _f64(E, [[0.25, 1.0], [math.inf, -1.0]]))
        assert fw.unpack_dual(x.amax(0)).tangent.tolist() == [0.25, -1.0]
        base = fw.make_dual(_f64(E, [1.0, 2.0]), _f64(E, [0.5, -1.0])) * 1
        with E.inference_mode():
            view = base.select(-1, 0)
        assert fw.unpack_dual(view).tangent.item() == 0.5
        base.detach_()
        assert fw.unpack_dual(base).tangent is None
        assert fw.unpack_dual(view).tangent.item() == 0.5


@case("grad() returns a non-leaf input's gradient before its tensor hooks when the input's "
      "node runs on toward another input, after them when grad() stops there",
      source=TORCH_BEHAVIOUR)
def captured_gradients_and_hooks(E):
    results = []
    for written in (False, True):
        a = _f64(E, 0.5, requires_grad=True)
        b = _f64(E, -1.0, requires_grad=True) * 1
        if written:
            b.add_(a)       # b's node now leads to a as well: it runs on
        b.register_hook(lambda g: g * -1)
        results.append(E.autograd.grad((b * a).sum(), [a, b])[1].item())
    # d/db (b a) = a = 0.5; the hook's sign only where grad() stops at b
    assert results == [-0.5, 0.5]


@case("pow's gradient in the base is 0 where the exponent is 0, even for a NaN gradient; "
      "cumprod over a dim of size 1 passes the gradient through with no graph",
      source=TORCH_BEHAVIOUR)
def pow_at_exponent_zero_and_cumprod_of_one(E):
    x = _f64(E, [2.0, 3.0], requires_grad=True)
    E.pow(x, _f64(E, [0.0, 2.0])).backward(_f64(E, [math.nan, 1.0]))
    assert x.grad.tolist() == [0.0, 6.0]
    y = _f64(E, [[2.0, 3.0]], requires_grad=True)
    g, = E.autograd.grad(E.cumprod(y, 0).sum(), [y], create_graph=True)
    assert g.tolist() == [[1.0, 1.0]] and not g.requires_grad


@case("writes through views: a view of an expand that repeats no element (its diagonal) "
      "may be written; a retained grad of a base follows the base's new history when a view "
      "of it is written; an op writing its input in place with a view of it as operand makes "
      "that view's history the new one (backward then finds the operand changed)",
      source=TORCH_BEHAVIOUR)
def writes_through_views_and_the_histories_they_make(E):
    base = _f64(E, [2.0, 3.0, 0.5])
    base.unsqueeze(0).expand(2, 3).diagonal().mul_(_f64(E, [5.0, 7.0]))
    assert base.tolist() == [10.0, 21.0, 0.5]
    x = _f64(E, [0.25, 0.5, 2.0], requires_grad=True) * 1
    x.retain_grad()
    x[1:].pow_(2)
    x.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0]
    y = _f64(E, [[2.0, -1.0], [4.0, 0.5]], requires_grad=True) * 1
    same = y[:]
    y.div_(same)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        same.sum().backward()


@case("select() out of range is torch's IndexError naming select() and the whole size, "
      "indexing names the position in the index; std's tangent is 0 where std is 0, even "
      "for a NaN tangent", source=TORCH_BEHAVIOUR)
def select_messages_and_the_tangent_of_a_zero_std(E):
    with pytest.raises(IndexError, match=re.escape(
            "select(): index 0 out of range for tensor of size [2, 0] at dimension 1")):
        E.ones(2, 0).select(-1, 0)
    with pytest.raises(IndexError, match="index 7 is out of bounds for dimension 2 with size 4"):
        E.ones(3, 2, 4)[0, ..., 7]
    fw = E.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(_f64(E, [2.0, 2.0]), _f64(E, [math.nan, 1.0]))
        assert fw.unpack_dual(x.std()).tangent.item() == 0.0


@case("an in-place op reads the history of an operand that views its memory as it was "
      "before the write: copy_ from a no_grad view of the destination is allowed (the view "
      "refuses its grad_fn only afterwards)", source=TORCH_BEHAVIOUR)
def copy_from_a_no_grad_view_of_the_destination(E):
    x = _f64(E, [-0.5, 0.75, 0.25], requires_grad=True)
    y = E.logsumexp(x, 0) * 1
    with E.no_grad():
        same = y.squeeze()
    y.copy_(same)
    y.backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]     # y's value no longer depends on x
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode"):
        same.grad_fn


@case("std's gradient is 0 where std is 0, even for an infinite or NaN gradient of std (the "
      "gradient divided by 2 std is masked after the division)", source=TORCH_BEHAVIOUR)
def gradient_of_a_zero_std(E):
    x = _f64(E, [[0.5, 0.5, 0.5], [1.0, 2.0, 3.0]], requires_grad=True)
    x.std(1).backward(_f64(E, [-math.inf, 1.0]))
    # row 1: d std / dx = (x - mean) / ((n - 1) std) = [-0.5, 0, 0.5] at std = 1
    assert x.grad.tolist() == [[0.0, 0.0, 0.0], [-0.5, 0.0, 0.5]]
    y = _f64(E, [2.0, 2.0], requires_grad=True)
    y.std().backward(_f64(E, math.nan))
    assert y.grad.tolist() == [0.0, 0.0]


@case("a view made while its base required grad keeps a history after the base is detached "
      "in place and written: a node regenerated from the base (AsStridedBackward0) that leads "
      "nowhere, so the view still requires grad and the base's old inputs get no gradient",
      source=TORCH_BEHAVIOUR)
def view_of_a_base_detached_in_place_then_written(E):
    leaf = _f64(E, [1.0, 2.0], requires_grad=True)
    calls = []
    leaf.register_hook(calls.append)
    base = leaf * 1
    view = base[0:]
    base.detach_()
    assert view.grad_fn.name() == "SliceBackward0" and not base.requires_grad
    base.add_(1)
    assert view.grad_fn.name() == "AsStridedBackward0" and view.requires_grad
    assert view.grad_fn.next_functions == ((None, 0),)
    (view * 2).sum().backward()
    assert leaf.grad is None and calls == []
    plain = _f64(E, [1.0, 2.0])
    alias = plain[0:]
    plain.add_(1)
    assert alias.grad_fn is None and not alias.requires_grad   # it never had a history


@case("select, split, chunk, unbind and indexing of a 0-dim tensor raise torch's errors: "
      "select(), unbind (after checking the dim's range) and [0] or [0:1] an IndexError, "
      "split and chunk a RuntimeError asking for a 1-dimensional tensor", source=TORCH_BEHAVIOUR)
def ops_of_several_views_refuse_a_0_dim_tensor(E):
    x = _f64(E, [0.5]).squeeze()
    for call, error, text in (
            (lambda: x.select(-1, 0), IndexError, "select() cannot be applied to a 0-dim tensor."),
            (lambda: x.unbind(-1), IndexError, "Dimension specified as 0 but tensor has no "
                                               "dimensions"),
            (lambda: x.unbind(1), IndexError, "Dimension out of range (expected to be in range "
                                              "of [-1, 0], but got 1)"),
            (lambda: x.split(1), RuntimeError, "split expects at least a 1-dimensional tensor"),
            (lambda: x.chunk(2), RuntimeError, "chunk expects at least a 1-dimensional tensor"),
            (lambda: x[0], IndexError, "invalid index of a 0-dim tensor. Use `tensor.item()`"),
            (lambda: x[0:1], IndexError, "slice() cannot be applied to a 0-dim tensor.")):
        with pytest.raises(error, match=re.escape(text)):
            call()


@case("copy_ onto a view of the same data (same memory, shape and strides) does nothing, "
      "even where the destination's elements share memory (a view of an expand); another "
      "view of that memory is refused", source=TORCH_BEHAVIOUR)
def copy_onto_a_view_of_the_same_data(E):
    base = _f64(E, [[1.5, 0.5, 2.0], [-1.0, 3.0, 0.25]])
    wide = base.unsqueeze(0).expand(2, 2, 3)
    left = wide.narrow(-1, 0, 2)
    assert left.narrow(-1, 0, 2).is_set_to(left) and not wide.narrow(-1, 1, 2).is_set_to(left)
    left.narrow(-1, 0, 2).copy_(left)
    assert base.tolist() == [[1.5, 0.5, 2.0], [-1.0, 3.0, 0.25]]
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        wide.narrow(-1, 1, 2).copy_(left)


@case("the hooks of a non-leaf tensor stay with it through detach_(): once it requires grad "
      "again (a leaf), its gradient goes through them first, then through hooks registered "
      "since; hooks registered before an in-place op on it stay with the old history",
      source=TORCH_BEHAVIOUR)
def hooks_of_a_tensor_detached_in_place(E):
    grads = []
    for write_first in (False, True):
        t = _f64(E, [1.0, 2.0], requires_grad=True) * 1
        t.register_hook(lambda g: g * 2)
        if write_first:
            t.mul_(1)
        t.detach_()
        t.requires_grad_()
        t.register_hook(lambda g: g + 10)
        (t * 3).sum().backward()
        grads.append(t.grad.tolist())
    # d/dt sum(3 t) = 3; then * 2 (the first hook, unless the write moved it), then + 10
    assert grads == [[16.0, 16.0], [13.0, 13.0]]


@case("requires_grad_() asks a view only for the history it has recorded: a view made in "
      "no_grad or inference mode whose base was written since counts as a leaf (either flag "
      "is accepted) until its grad_fn is read", source=TORCH_BEHAVIOUR)
def requires_grad_of_a_view_whose_base_was_written(E):
    x = _f64(E, [1.0, 2.0], requires_grad=True) * 1
    with E.no_grad():
        quiet = x[0:]
    with E.inference_mode():
        frozen = x.unsqueeze(0)
    x.mul_(2)
    for view in (quiet, frozen):
        assert view.requires_grad_(False) is view and view.requires_grad_(True) is view
        with pytest.raises(RuntimeError, match="its base or another view of its base has been "
                                               "modified inplace"):
            view.grad_fn
    written = _f64(E, [1.0, 2.0], requires_grad=True) * 1
    recorded = written[0:]
    written.mul_(2)
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf"):
        recorded.requires_grad_(False)


@case("clone() keeps the strides of a dense input (the clone of a transposed tensor is "
      "transposed, so view(-1) refuses it) and makes others contiguous; contiguous() copies "
      "in C order, recorded as CloneBackward0", source=TORCH_BEHAVIOUR)
def clone_preserves_the_layout_of_a_dense_tensor(E):
    x = _f64(E, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    copy = x.t().clone()
    assert copy.stride() == (1, 3) and E.ones(4, 6)[:, ::2].clone().stride() == (3, 1)
    with pytest.raises(RuntimeError, match="view size is not compatible with input tensor's "
                                           "size and stride"):
        copy.view(-1)
    flat = x.t().contiguous()
    assert flat.stride() == (2, 1) and flat.grad_fn.name() == "CloneBackward0"
    assert flat.view(-1).tolist() == [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]


@case("cumprod's gradient is the incoming gradient itself, with no graph to the input, for "
      "an input of at most one element (an empty one too) or a dim of size 1",
      source=TORCH_BEHAVIOUR)
def cumprod_gradient_of_an_empty_input(E):
    x = _f64(E, [1.5], requires_grad=True) * 1
    empty = x[1:]
    g, = E.autograd.grad(E.cumprod(empty, 0).sum() + x.sum(), [x], create_graph=True)
    assert g.tolist() == [1.0] and not g.requires_grad


@case("zero_ and fill_ write a view of an expand of a diagonal (its places repeat): each "
      "memory place gets the value once, the rest of the base is left", source=TORCH_BEHAVIOUR)
def zero_of_an_expanded_diagonal(E):
    base = _f64(E, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    base.diagonal().unsqueeze(0).expand(2, 2).zero_()
    assert base.tolist() == [[0.0, 2.0, 3.0], [4.0, 0.0, 6.0]]
    base.diagonal().unsqueeze(0).expand(3, 2).fill_(7.5)
    assert base.tolist() == [[7.5, 2.0, 3.0], [4.0, 7.5, 6.0]]


@case("a view's retained grad follows the view's new history after an in-place op on it: "
      "a backward through what read the view before the write leaves it None",
      source=TORCH_BEHAVIOUR)
def retained_grad_of_a_view_written_in_place(E):
    grads = []
    for also_after in (False, True):
        x = _f64(E, [1.0, 2.0], requires_grad=True) * 1
        view = x[1:]
        view.retain_grad()
        before = view * 3
        view.mul_(2)
        loss = before.sum() + (view.sum() if also_after else 0)
        loss.backward()
        grads.append(None if view.grad is None else view.grad.tolist())
    assert grads == [None, [1.0]]


@case("an empty view is a view all the same: the diagonal of an empty slice shares its "
      "base's version counter (a write to the base counts for it), as a non-empty one does",
      source=TORCH_BEHAVIOUR)
def empty_views_share_the_version_counter(E):
    base = _f64(E, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    base.add_(1)
    for view in (base[2:], base[2:].diagonal(), base[1:].diagonal(), base.diagonal()):
        assert view._version == base._version == 1
    empty = base[2:].diagonal()
    base.mul_(2)
    assert empty._version == 2 and tuple(empty.shape) == (0,)


@case("the gradient a base gets through an in-place write on one of its views is laid out "
      "as the base, not as the incoming gradient: a double backward whose gradient arrives "
      "transposed still replays view(-1) on it", source=TORCH_BEHAVIOUR)
def copy_slices_lays_its_gradient_out_as_the_base(E):
    leaf = E.tensor([[0.5 + 0.15j, 0.5 + 1.0j, -1.0], [0.47, 0.65 + 0.35j, 2.0 - 0.36j]],
                    dtype=E.complex128, requires_grad=True)
    w = leaf * 1
    w.view(-1).neg_()
    (g,) = E.autograd.grad(E.abs(w.transpose(0, 1)).sum(), [w], create_graph=True)
    (g * g.conj()).real.sum().backward()
    # sum |w|'s gradient is w / |w|, of norm 1 everywhere: |g|^2 is constant, so the
    # leaf's gradient is zero (to rounding) wherever w is not 0
    assert max(abs(z) for row in leaf.grad.tolist() for z in row) < 1e-12


@case("a tensor's later hooks join the node its first hook went to, without reading its "
      "grad_fn again: a split view whose base was written since accepts them (its grad_fn "
      "would raise), and they run with the first, on the history from before the write",
      source=TORCH_BEHAVIOUR)
def later_hooks_join_the_first_hooks_node(E):
    calls = []
    for make in (lambda b: b.split(1)[0], lambda b: b[0]):
        base = _f64(E, [[1.0, 4.0], [9.0, 16.0]], requires_grad=True) * 1
        view = make(base)
        view.register_hook(lambda g: calls.append(("first", g.tolist())))
        before = view * 3
        base.mul_(2)
        view.register_hook(lambda g: calls.append(("second", g.tolist())))
        before.sum().backward()
    assert calls == [("first", [[3.0, 3.0]]), ("second", [[3.0, 3.0]]),
                     ("first", [3.0, 3.0]), ("second", [3.0, 3.0])]
    # a first hook after the write reads grad_fn, which raises for a split view;
    # the hook after it is accepted and never called
    base = _f64(E, [[1.0, 4.0], [9.0, 16.0]], requires_grad=True) * 1
    view = base.split(1)[0]
    before = view * 3
    base.mul_(2)
    with pytest.raises(RuntimeError, match="is the output of a function that returns "
                                           "multiple views"):
        view.register_hook(lambda g: calls.append(("raised", g)))
    view.register_hook(lambda g: calls.append(("accepted", g)))
    before.sum().backward()
    assert len(calls) == 4
