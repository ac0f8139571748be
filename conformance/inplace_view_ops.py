"""In-place view ops (t_, transpose_, swapdims_, swapaxes_, squeeze_, unsqueeze_,
as_strided_): a tensor changes shape in place, as an in-place op does."""
from __future__ import annotations

import pytest

from adcheck.conformance.case import AUTOGRAD_NOTE, MECHANICS, TORCH_BEHAVIOUR, case

# op name -> (call, shape of the 2x3 (or 1x2x3 for squeeze_) input afterwards, node)
OPS = {
    "t_": (lambda t: t.t_(), (3, 2), "TBackward1"),
    "transpose_": (lambda t: t.transpose_(0, 1), (3, 2), "TransposeBackward1"),
    "swapdims_": (lambda t: t.swapdims_(1, 0), (3, 2), "TransposeBackward1"),
    "swapaxes_": (lambda t: t.swapaxes_(0, -1), (3, 2), "TransposeBackward1"),
    "squeeze_": (lambda t: t.squeeze_(), (2, 3), "SqueezeBackward3"),
    "squeeze_(dim)": (lambda t: t.squeeze_(0), (2, 3), "SqueezeBackward4"),
    "unsqueeze_": (lambda t: t.unsqueeze_(1), (2, 1, 3), "UnsqueezeBackward1"),
    "as_strided_": (lambda t: t.as_strided_((3, 2), (1, 3)), (3, 2), "AsStridedBackward1"),
}


def _start(E, name, requires_grad=False):
    shape = (1, 2, 3) if name.startswith("squeeze_") else (2, 3)
    return E.arange(6.0).reshape(shape).clone().requires_grad_(requires_grad)


@case("in-place view ops change the shape of the tensor they are called on, return it, "
      "and bump its version; the memory is untouched", source=TORCH_BEHAVIOUR)
def inplace_view_op_reshapes_in_place(E):
    for name, (op, shape, _) in OPS.items():
        t = _start(E, name)
        before = t.reshape(-1).tolist()
        assert op(t) is t, name
        assert tuple(t.shape) == shape and t._version == 1, name
        assert t.transpose(0, 1).reshape(-1).tolist() == before if shape == (3, 2) \
            else t.reshape(-1).tolist() == before, name


@case("on a non-leaf, an in-place view op becomes the tensor's grad_fn under its in-place "
      "name (TBackward1, SqueezeBackward4...), and gradients flow back through it to the "
      "old shape", source=TORCH_BEHAVIOUR)
def inplace_view_op_on_a_non_leaf_is_recorded(E):
    for name, (op, shape, node) in OPS.items():
        a = _start(E, name, requires_grad=True)
        b = a * 1
        op(b)
        assert b.grad_fn.name() == node and not b.is_leaf and not b._is_view(), name
        weights = E.arange(6.0).reshape(shape)
        (b * weights).sum().backward()
        expected = weights.transpose(0, 1).reshape(-1) if shape == (3, 2) else weights.reshape(-1)
        assert a.grad.reshape(-1).tolist() == expected.tolist(), name


@case("However, there is one case where this optimization is not possible: an in-place "
      "view op on a leaf that requires grad, or on a view of one, raises the in-place "
      "leaf errors", source=TORCH_BEHAVIOUR)
def inplace_view_op_on_a_leaf_is_refused(E):
    for name, (op, _, _) in OPS.items():
        leaf = E.ones(1, 2, 3, requires_grad=True) if name.startswith("squeeze_") \
            else E.ones(2, 3, requires_grad=True)
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being "
                                               "used in an in-place operation"):
            op(leaf)
        assert leaf._version == 0
        with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
            op(leaf[:])
        with E.no_grad():
            op(leaf)                          # allowed without recording
        assert leaf.is_leaf and leaf.grad_fn is None and leaf._version == 1


@case("When a Function saves any tensors for backward, a version counter of their "
      "containing Tensor is saved as well.", source=MECHANICS)
def inplace_view_op_invalidates_saved_tensors(E):
    for name, (op, _, _) in OPS.items():
        a = _start(E, name, requires_grad=True)
        b = a * 1
        c = b * b                             # saves b
        d = b.exp()                           # saves its result, not b
        op(b)
        d.sum().backward()
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            c.sum().backward()


@case("in-place view ops on a view of a non-leaf keep it a view of the same base; a later "
      "in-place write through it reaches the base, with the right gradient",
      source=TORCH_BEHAVIOUR)
def inplace_view_op_on_a_view(E):
    x = E.arange(6.0, requires_grad=True)
    c = x * 1
    v = c.view(2, 3)
    v.t_()
    assert v._base is c and tuple(v.shape) == (3, 2) and v.grad_fn.name() == "TBackward1"
    assert c._version == 1
    v.mul_(2)
    assert c.grad_fn.name().endswith("CopySlices") and c.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    (c * E.arange(6.0)).sum().backward()
    assert x.grad.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]


@case("When an in-place operation is performed on a view, the base is rebased: views made "
      "before an in-place view op on their base still read the region they were made of",
      source=AUTOGRAD_NOTE)
def views_made_before_still_read_their_region(E):
    x = E.arange(6.0, requires_grad=True)
    c = x.view(2, 3) * 1
    row = c[0]
    c.t_()
    assert tuple(row.shape) == (3,)
    row.mul_(10)
    assert c.tolist() == [[0.0, 3.0], [10.0, 4.0], [20.0, 5.0]]
    (c * E.arange(6.0).view(3, 2)).sum().backward()
    assert x.grad.tolist() == [0.0, 20.0, 40.0, 1.0, 3.0, 5.0]


@case("forward-mode tangents follow an in-place view op: the tangent changes shape with "
      "its primal, and views made before keep reading theirs", source=TORCH_BEHAVIOUR)
def inplace_view_op_moves_the_tangent(E):
    fwAD = E.autograd.forward_ad
    with fwAD.dual_level():
        p = fwAD.make_dual(E.arange(6.0).view(2, 3), E.arange(6.0).view(2, 3) * 10)
        q = p * 1
        row = q[0]
        q.t_()
        assert fwAD.unpack_dual(q).tangent.tolist() == [[0.0, 30.0], [10.0, 40.0], [20.0, 50.0]]
        assert fwAD.unpack_dual(row).tangent.tolist() == [0.0, 10.0, 20.0]
        q.unsqueeze_(0)
        assert tuple(fwAD.unpack_dual(q).tangent.shape) == (1, 3, 2)


@case("in-place view ops check their arguments as their out-of-place ops do, and refuse "
      "multi-output views, no_grad views and inference tensors as in-place ops do",
      source=TORCH_BEHAVIOUR)
def inplace_view_op_refusals(E):
    with pytest.raises(IndexError, match="Dimension out of range"):
        E.ones(2, 3).transpose_(0, 5)
    with pytest.raises(RuntimeError, match="t_\\(\\) expects a tensor with <= 2 dimensions"):
        E.ones(2, 3, 4).t_()
    with pytest.raises(RuntimeError, match="out of bounds for storage"):
        E.ones(2).as_strided_((5,), (1,))
    kept = E.ones(2, 3)
    kept.squeeze_(0)                          # not of size 1: the shape stays
    assert tuple(kept.shape) == (2, 3) and kept._version == 1
    y = E.ones(4, 2, requires_grad=True) * 1
    with pytest.raises(RuntimeError, match="output of a function that returns multiple views"):
        y.split(2)[0].t_()
    with E.no_grad():
        nv = y[0:2]
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode"):
        nv.t_()
    with E.inference_mode():
        frozen = E.ones(2, 3)
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside "
                                           "InferenceMode"):
        frozen.t_()


@case("as_strided addresses the storage in elements: size, strides and an offset (by default "
      "the tensor's own); its gradient scatters back through the storage positions",
      source=TORCH_BEHAVIOUR)
def as_strided_reads_the_storage(E):
    base = E.arange(6.0)
    view = base[2:]
    assert view.storage_offset() == 2 and view.stride() == (1,)
    assert view.as_strided((2,), (2,)).tolist() == [2.0, 4.0]
    assert view.as_strided((2, 2), (1, 1), 0).tolist() == [[0.0, 1.0], [1.0, 2.0]]
    t = E.ones(2, 3)
    t.as_strided_((2, 2), (1, 1), 1)
    assert t.storage_offset() == 1 and t.stride() == (1, 1)
    x = E.arange(6.0, requires_grad=True)
    c = x * 1
    c.as_strided((2, 2), (1, 1), 1).sum().backward()   # overlapping windows: counts add
    assert x.grad.tolist() == [0.0, 1.0, 2.0, 1.0, 0.0, 0.0]
