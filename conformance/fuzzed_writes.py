"""More behaviours the differential fuzzer (tests/fuzz, docs/fuzzing.md) found refengine
getting differently from torch 2.13, one case per class of finding.

Writes into expanded tensors and the gradients of views of a base written in
place, empty slices as views, what forward mode does with an input that has
no tangent, in-place ops on inference tensors, saved tensors cut by detach_(),
and the texts of the errors met on the way.
"""
from __future__ import annotations

import math

import pytest

from adcheck.conformance.case import TORCH_BEHAVIOUR, case

NAN, INF = math.nan, math.inf


def _f64(E, values, **kw):
    return E.tensor(values, dtype=E.float64, **kw)


@case("a view that repeats an element (expand) of a base written in place gets its grad_fn "
      "from the base again; its backward adds up the gradients of the repeated element",
      source=TORCH_BEHAVIOUR)
def expanded_view_of_written_base_sums_its_gradient(E):
    base = _f64(E, 0.5)
    view = base.unsqueeze(0).expand(3)
    w = _f64(E, 2.0, requires_grad=True)
    base.mul_(w)
    assert view.tolist() == [1.0, 1.0, 1.0] and view.grad_fn is not None
    (view * _f64(E, [1.0, 2.0, 3.0])).sum().backward()
    # d/dw of (0.5 w) * (1 + 2 + 3)
    assert w.grad.item() == 3.0


@case("fill_ and zero_ may write a tensor whose elements share memory (an expand), and "
      "copy_ of such a tensor onto itself is allowed; other in-place ops refuse it, and so "
      "does the backward of the write", source=TORCH_BEHAVIOUR)
def writes_into_expanded_tensors(E):
    base = _f64(E, [1.0, 2.0])
    view = base.unsqueeze(0).expand(3, 2)
    view.fill_(4.0)
    assert base.tolist() == [4.0, 4.0]
    view.zero_()
    assert base.tolist() == [0.0, 0.0] and view._version == 2
    view.copy_(view)
    assert view._version == 3
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor "
                                           "refers to a single memory location"):
        view.mul_(2)
    leaf = _f64(E, [1.0, 2.0], requires_grad=True)
    x = leaf * 1
    x.unsqueeze(0).expand(2, 2).zero_()
    with pytest.raises(RuntimeError, match="refers to a single memory location"):
        x.sum().backward()


@case("zero_ of an expanded dual tensor zeroes the base's tangent too", source=TORCH_BEHAVIOUR)
def zero_of_expanded_dual_tensor(E):
    fw = E.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(_f64(E, [1.0, -2.0]), _f64(E, [3.0, 4.0]))
        v = x.unsqueeze(0).expand(2, 2)
        v.zero_()
        assert fw.unpack_dual(v).tangent.tolist() == [[0.0, 0.0], [0.0, 0.0]]
        assert fw.unpack_dual(x).tangent.tolist() == [0.0, 0.0]


@case("an empty slice is a view like any other: made under no_grad from a tensor that "
      "requires grad, it requires grad too (through its base)", source=TORCH_BEHAVIOUR)
def empty_slices_are_views(E):
    a = E.ones(2, 3, dtype=E.float64, requires_grad=True) * 1
    with E.no_grad():
        views = (a[2:], a[1:][1:], a[:, 3:], a.narrow(0, 2, 0))
    for v in views:
        assert v.numel() == 0 and v._is_view() and v._base is a
        assert v.requires_grad and v.grad_fn is None
    assert a[2:]._is_view() and a[2:].grad_fn is not None


@case("forward mode: an input without a tangent contributes exactly nothing (x**-1 at 0 "
      "times 2 keeps its inf tangent), while a zero tangent, such as sign's, is multiplied "
      "like any other (0 * log(x) at x < 0 is NaN in pow's tangent)", source=TORCH_BEHAVIOUR)
def absent_and_zero_tangents(E):
    fw = E.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(_f64(E, [0.0, 2.0, 0.5]), _f64(E, [-1.0, 1.0, 0.0]))
        r = x ** -1.0
        r.mul_(2)
        # 2 * (-1) x**-2 * t: +inf at 0, -0.5 at 2, -0.0 for a zero tangent
        t = fw.unpack_dual(r).tangent.tolist()
        assert t[:2] == [INF, -0.5] and t[2] == 0.0 and math.copysign(1, t[2]) == -1
        y = fw.make_dual(_f64(E, [-0.5, 0.5, 0.0]), _f64(E, [1.0, 1.0, 1.0]))
        t = fw.unpack_dual(E.pow(y, E.sign(y))).tangent.tolist()
        # exponent -1 at -0.5 (its zero tangent meets log(-0.5) = NaN), 1 at 0.5,
        # 0 at 0 (the derivative is 0 there in both arguments)
        assert math.isnan(t[0]) and t[1:] == [1.0, 0.0]


@case("an in-place op on an inference tensor outside inference mode writes its values but "
      "no tangent before it raises", source=TORCH_BEHAVIOUR)
def inference_tensor_inplace_leaves_no_tangent(E):
    fw = E.autograd.forward_ad
    with fw.dual_level():
        d = fw.make_dual(_f64(E, [-0.5, 1.0]), _f64(E, [2.0, 3.0]))
        with E.inference_mode():
            t = E.sgn(d)
        assert fw.unpack_dual(t).tangent is None
        with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside"):
            t.copy_(d)
        assert t.tolist() == [-0.5, 1.0] and fw.unpack_dual(t).tangent is None


@case("detach_() of a view of an inference tensor is allowed (inference tensors have no "
      "autograd views)", source=TORCH_BEHAVIOUR)
def detach_of_inference_view(E):
    x = E.ones(2, 3, dtype=E.complex128, requires_grad=True)
    with E.inference_mode():
        r = E.reciprocal(x)
    v = r.real
    assert v.detach_() is v and not v.requires_grad and v.is_leaf


@case("a tensor saved for backward as an input and then detached in place: backward raises "
      "that the saved tensor was detached in place (a saved output is not affected)",
      source=TORCH_BEHAVIOUR)
def saved_input_detached_in_place(E):
    x = _f64(E, [1.0, -0.5], requires_grad=True)
    s = E.sigmoid(x)
    m = E.minimum(x, s)          # saves s as an input
    s.detach_()
    with pytest.raises(RuntimeError, match=r"Trying to use a saved tensor that has been "
                                           r"detached in-place, i\.e\. with \.detach_\(\)"):
        m.sum().backward()
    s2 = E.sigmoid(x)            # saves its result
    y = s2 * 2
    s2.detach_()
    y.sum().backward()
    sig = [1 / (1 + math.exp(-v)) for v in (1.0, -0.5)]
    assert x.grad.tolist() == pytest.approx([2 * v * (1 - v) for v in sig], rel=1e-14)


@case("prod saves its result: writing the product in place makes backward fail, even "
      "where the gradient that reaches it is zero", source=TORCH_BEHAVIOUR)
def prod_saves_its_result(E):
    x = _f64(E, 0.5, requires_grad=True) * 1
    p = x.prod()
    p.pow_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        E.sgn(p).backward()


@case("transpose of a dimension out of range is torch's IndexError, naming the range",
      source=TORCH_BEHAVIOUR)
def transpose_dimension_out_of_range(E):
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range "
                                         r"of \[-1, 0\], but got 1\)"):
        E.ones(3).transpose(0, 1)
    assert E.ones(()).transpose(0, -1).shape == ()
    assert E.ones(2, 3).transpose(-1, 0).shape == (3, 2)


@case("error texts name dtypes as torch does: a cast refused by an in-place op by scalar "
      "type (ComplexDouble, Double), a complex tensor in the saved-tensor version error by "
      "its backend type ([CPUComplexDoubleType [2]]); that error names the saved input's "
      "grad_fn as it is after the in-place op", source=TORCH_BEHAVIOUR)
def dtype_names_in_messages(E):
    with pytest.raises(RuntimeError, match="result type ComplexDouble can't be cast to the "
                                           "desired output type Double"):
        _f64(E, [1.0]).div_(E.tensor([1j], dtype=E.complex128))
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        E.ones(2, dtype=E.int64).add_(E.ones(2, dtype=E.float32))
    a = E.ones(2, dtype=E.complex128, requires_grad=True) * 1
    b = a * a
    a.add_(1)
    with pytest.raises(RuntimeError, match=r"\[CPUComplexDoubleType \[2\]\], which is output "
                                           r"0 of Add,"):
        b.abs().sum().backward()
    c = _f64(E, [1.0, 2.0], requires_grad=True) * 1
    d = c * c
    c[:1].mul_(3)
    with pytest.raises(RuntimeError, match=r"\[refengine\.DoubleTensor \[2\]\], which is "
                                           r"output 0 of (torch::autograd::)?CopySlices,"
                                           .replace("refengine", E.__name__.split(".")[-1])):
        d.sum().backward()


@case("pow's derivative in the exponent at a zero base is 0 only for a real exponent >= 0; "
      "for an exponent with an imaginary part it is 0 * log(0), NaN", source=TORCH_BEHAVIOUR)
def pow_exponent_derivative_at_zero_base(E):
    c = E.tensor([0.5 + 1j, 2 + 0j], dtype=E.complex128, requires_grad=True)
    (g,) = E.autograd.grad(E.pow(_f64(E, [0.0, 0.0]), c), c, E.ones(2, dtype=E.complex128))
    first, second = g.tolist()
    assert math.isnan(first.real) and math.isnan(first.imag) and second == 0


@case("x ** p saves its result even when only x needs a gradient: writing the power in "
      "place makes backward fail", source=TORCH_BEHAVIOUR)
def pow_saves_its_result_for_either_input(E):
    x = _f64(E, 0.976, requires_grad=True)
    y = E.pow(x, _f64(E, 0.5))
    y.sqrt_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


@case("cumsum and cumprod give a contiguous result whatever the input's strides, so "
      "view(-1) of the scan of a transposed tensor works", source=TORCH_BEHAVIOUR)
def scans_are_contiguous(E):
    t = _f64(E, [[1.0, 2.0], [3.0, 4.0]]).t()
    assert t.cumsum(0).view(-1).tolist() == [1.0, 3.0, 3.0, 7.0]
    assert t.cumprod(1).view(-1).tolist() == [1.0, 3.0, 2.0, 8.0]


@case("an in-place op on a one-element piece of an expanded dual tensor writes the value "
      "and the tangent through to the base", source=TORCH_BEHAVIOUR)
def inplace_on_one_element_of_an_expand(E):
    fw = E.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(_f64(E, 0.5), _f64(E, -1.5))
        piece = x.unsqueeze(0).expand(2).split(1)[0]
        piece.mul_(2)
        assert x.item() == 1.0 and fw.unpack_dual(x).tangent.item() == -3.0
        assert fw.unpack_dual(piece).tangent.tolist() == [-3.0]


@case("the 2-norm's tangent is 0 where the norm is 0, even for a NaN tangent",
      source=TORCH_BEHAVIOUR)
def norm_tangent_at_zero(E):
    fw = E.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(_f64(E, [[0.0, 0.0], [3.0, 4.0]]), _f64(E, [[NAN, 1.0], [1.0, 1.0]]))
        # at [3, 4]: (3 * 1 + 4 * 1) / 5
        assert fw.unpack_dual(x.norm(dim=1)).tangent.tolist() == [0.0, 1.4]


@case("max(), min(), amax() and amin() of an empty tensor ask for a dim, in torch's words",
      source=TORCH_BEHAVIOUR)
def full_reductions_of_an_empty_tensor(E):
    empty = E.ones(3, dtype=E.float64)[3:]
    for name in ("max", "min", "amax", "amin"):
        with pytest.raises(RuntimeError, match=rf"^{name}\(\): Expected reduction dim to be "
                                               r"specified for input\.numel\(\) == 0\. Specify "
                                               r"the reduction dim with the 'dim' argument\.$"):
            getattr(empty, name)()


@case("forward mode: a tangent has its primal's layout, so view(-1) of a scan's result "
      "(contiguous) works on a dual tensor; an in-place op on a 0-d piece of an expand "
      "writes through", source=TORCH_BEHAVIOUR)
def tangents_follow_their_primal(E):
    fw = E.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(_f64(E, [[1.0, 2.0], [3.0, 4.0]]), _f64(E, [[1.0, 0.0], [0.0, 1.0]]))
        flat = E.cumprod(x, 0).view(-1)
        # d(cumprod) row 2 = (t0 * x1 + x0 * t1): [1*3 + 1*0, 0*4 + 2*1]
        assert fw.unpack_dual(flat).tangent.tolist() == [1.0, 0.0, 3.0, 2.0]
        y = fw.make_dual(_f64(E, 0.5), _f64(E, -2.0))
        piece = y.unsqueeze(0).expand(2)[0]
        piece.sin_()
        assert y.item() == math.sin(0.5)
        assert fw.unpack_dual(y).tangent.item() == -2.0 * math.cos(0.5)


@case("a view made in no_grad mode, saved by a one-input op (sin, cumprod), makes backward "
      "fail once its base is written in place; an op that does not save it (exp, v * 2) "
      "is not affected", source=TORCH_BEHAVIOUR)
def saved_no_grad_view_of_a_written_base(E):
    def backward_after_write(f):
        x = _f64(E, [-0.2, 0.5], requires_grad=True)
        base = x * 1
        with E.no_grad():
            view = base.view(-1)
        out = f(view)
        base.neg_()
        out.sum().backward()
    for f in (E.sin, lambda v: E.cumprod(v, 0)):
        with pytest.raises(RuntimeError, match="A view was created in no_grad mode and its "
                                               "base or another view of its base has been "
                                               "modified inplace with grad mode enabled"):
            backward_after_write(f)
    for f in (E.exp, lambda v: v * 2):
        backward_after_write(f)


@case("an in-place op whose operand is a view that refuses its grad_fn (one of several "
      "views, its base written) raises before it writes anything", source=TORCH_BEHAVIOUR)
def inplace_with_a_refused_operand_writes_nothing(E):
    target = E.tensor([1.5 + 0j, -0.5 + 0j], dtype=E.complex128)
    x = _f64(E, [[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    row = x.unbind(0)[1]
    with E.no_grad():
        row.add_(1.0)
    with pytest.raises(RuntimeError, match="output of a function that returns multiple views"):
        target.mul_(row)
    assert target.tolist() == [1.5 + 0j, -0.5 + 0j]


@case("narrow() of a 0-dim tensor is refused in torch's words; an in-place op on an "
      "inference tensor whose operand overlaps it in part reports the overlap first",
      source=TORCH_BEHAVIOUR)
def narrow_of_0_dim_and_overlap_before_inference(E):
    with pytest.raises(RuntimeError, match=r"narrow\(\) cannot be applied to a 0-dim tensor"):
        _f64(E, 1.0).narrow(-1, 0, 1)
    with E.inference_mode():
        t = _f64(E, [[1.0, 2.0], [3.0, 4.0]]) * 1
    with pytest.raises(RuntimeError, match="some elements of the input tensor and the "
                                           "written-to tensor refer to a single memory location"):
        t.div_(t[:1])


@case("logsumexp over an empty dim is -inf; requires_grad_() on a view whose grad_fn can no "
      "longer be rebuilt is a no-op (False is refused); an in-place op that would save an "
      "inference tensor raises before it writes", source=TORCH_BEHAVIOUR)
def empty_logsumexp_requires_grad_and_inference_save(E):
    assert E.logsumexp(E.ones(2, 0, dtype=E.float64), 1).tolist() == [-INF, -INF]
    x = E.ones(3, dtype=E.float64, requires_grad=True) * 1
    piece = x.split(1)[0]
    x.add_(1)
    assert piece.requires_grad_() is piece
    with pytest.raises(RuntimeError, match="only change requires_grad flags of leaf"):
        piece.requires_grad_(False)
    with E.inference_mode():
        frozen = _f64(E, [2.0, 3.0]) * 1
    y = E.log(_f64(E, [1.0, 2.0], requires_grad=True))
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        y.mul_(frozen)
    assert y.tolist() == [0.0, math.log(2.0)] and y._version == 0


@case("a leaf that detach_() and an in-place op have given a history makes the backward of "
      "a graph recorded before fail: the leaf was moved into the graph interior",
      source=TORCH_BEHAVIOUR)
def leaf_moved_into_the_graph_interior(E):
    x = _f64(E, [1.0, 4.0], requires_grad=True)
    r = E.rsqrt(x)
    x.detach_()
    x.copy_(r)
    with pytest.raises(RuntimeError, match="leaf variable has been moved into the graph "
                                           "interior"):
        E.minimum(r, x).sum().backward()


@case("copy_ from a source that would grow the destination raises torch's error, with or "
      "without forward AD (found by the fuzzer at seed 56, program 23320)",
      source=TORCH_BEHAVIOUR)
def copy_into_a_smaller_destination_raises(E):
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the "
                                           r"broadcast shape \[1, 3\]"):
        _f64(E, [1.0, 2.0, 3.0]).copy_(_f64(E, [[1.0, 2.0, 3.0]]))
    with E.autograd.forward_ad.dual_level():
        dual = E.autograd.forward_ad.make_dual(_f64(E, [1.0, 2.0, 3.0]), _f64(E, [1.0, 0.5, 2.0]))
        with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match"):
            E.maximum(dual, dual).copy_(dual.unsqueeze(0))
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size "
                                           r"of tensor b \(2\) at non-singleton dimension 0"):
        _f64(E, [1.0, 2.0, 3.0]).copy_(_f64(E, [1.0, 2.0]))


@case("an expanded real view (.imag) of a complex tensor whose base is then written in place "
      "differentiates through the regenerated view: each copy's gradient adds into the one "
      "part it reads (found by the fuzzer at seed 90, program 20540)",
      source=TORCH_BEHAVIOUR)
def expanded_imag_view_of_a_rewritten_base(E):
    z = E.tensor([complex(0.5, 0.37), complex(0.0, -1.0), complex(0.5, -1.592)],
                 dtype=E.complex128, requires_grad=True)
    w = z * 1
    twice = w.imag.unsqueeze(0).expand(2, 3)
    w.neg_()
    E.abs(twice).sum().backward()
    # sum |-Im z| taken twice: d/dy = 2 sign(y), the gradient 2i sign(Im z)
    assert z.grad.tolist() == [2j, -2j, -2j]


@case("an in-place write to a view made before its base required grad, untouched since the "
      "base's in-place write gave it a history, is refused as a write to a leaf; reading its "
      "grad_fn first regenerates its node and the write is recorded (found by the fuzzer at "
      "seed 93, program 4366)",
      source=TORCH_BEHAVIOUR)
def view_untouched_since_its_base_gained_a_history(E):
    scale = _f64(E, [0.5, 1.0, 2.0], requires_grad=True) * 1
    for read_first in (False, True):
        base = _f64(E, [0.75, -1.25, -2.0])
        view = base.unsqueeze(0)
        base.div_(scale)
        if not read_first:
            with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is "
                                                   "being used in an in-place operation"):
                view.sub_(1.5)
            continue
        assert view.grad_fn is not None
        view.sub_(1.5)
        (g,) = E.autograd.grad(base.sum(), scale)
        # base = (b / s) - 1.5: d/ds sum = -b / s**2
        assert g.tolist() == [-0.75 / 0.25, 1.25 / 1.0, 2.0 / 4.0]
