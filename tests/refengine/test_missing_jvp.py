"""An op without a jvp rule must fail loudly in forward mode, never give a zero tangent."""
import numpy as np
import pytest

import adcheck.refengine as E
from adcheck.refengine.ops.dispatch import call
from adcheck.refengine.ops.opdef import OpDef

# Built directly (not registered), so the public registry is untouched.
HALVE_NO_JVP = OpDef("halve_no_jvp", lambda self: self / 2,
                     inputs=("self",), vjp={"self": lambda grad: grad / 2}, jvp=None,
                     promote=("self",))


def test_reverse_mode_works_without_a_jvp():
    x = E.tensor([2.0, 4.0], dtype=E.float64, requires_grad=True)
    (g,) = E.autograd.grad(call(HALVE_NO_JVP, x).sum(), x)
    np.testing.assert_array_equal(g.numpy(), [0.5, 0.5])


def test_forward_mode_raises_naming_the_op():
    fw = E.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(E.tensor([2.0], dtype=E.float64), E.tensor([1.0], dtype=E.float64))
        with pytest.raises(RuntimeError, match="halve_no_jvp"):
            call(HALVE_NO_JVP, x)


def test_no_tangent_no_error():
    # a plain tensor inside a dual level needs no jvp at all
    fw = E.autograd.forward_ad
    with fw.dual_level():
        out = call(HALVE_NO_JVP, E.tensor([2.0], dtype=E.float64))
        assert fw.unpack_dual(out).tangent is None
