"""Inside ``reuse.shared`` a sample's gradgrad check takes the reverse check's
Jacobian (kept by ``gradcheck.core.reuse_ad``) for its block in the
grad_outputs (``gradcheck.core.reuse_gg``) and loses no failure it reports
when it differences that block: a backward not linear in its grad_output is
judged as before. Each verdict is cross-checked against torch (gradgradcheck,
its Jacobian of the vjp)."""
import numpy as np
import pytest

from adcheck import gradcheck
from adcheck.gradcheck.core.reuse import shared

torch = pytest.importorskip("torch", reason="the planted bugs are torch.autograd.Functions")

def _point(values=(0.3, -1.2, 2.0, 0.7)):
    return torch.tensor(values, dtype=torch.float64, requires_grad=True)


def _sin_with(backward):
    """sin whose backward is ``backward(grad, cos x)`` (a planted bug, or none)."""
    class Planted(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return torch.sin(x)

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return backward(grad, torch.cos(x))
    return Planted.apply


class _Lie(torch.autograd.Function):
    """``v * v`` whose backward claims the identity."""
    @staticmethod
    def forward(ctx, v):
        return v * v

    @staticmethod
    def backward(ctx, t):
        return t


#: sin whose backward is quadratic in grad_output, through a Function that tells
#: autograd it is linear: the first derivative's Jacobian in the grad_output
#: (2 v cos x) is not the backward's J^T at unit vectors (cos x)
_SQUARED_IN_BACKWARD = _sin_with(lambda grad, cos: _Lie.apply(grad) * cos)


def test_gradgrad_differentiates_the_backward_in_its_grad_output_itself():
    # J^T from the reverse check's unit-vector vjps would stand for this block only for a
    # backward linear in its grad_output; this one is not, and gradgrad must still see it
    x = _point((0.3, -1.2, 2.0))
    assert not torch.autograd.gradgradcheck(_SQUARED_IN_BACKWARD, (x,),
                                            raise_exception=False)   # the independent judge
    with shared():
        reverse = gradcheck.check(_SQUARED_IN_BACKWARD, (x,), precise=True)
        second = gradcheck.check(_SQUARED_IN_BACKWARD, (x,), precise=True, order=2)
    assert {f.check for f in reverse.failures} == {"scaling"}
    # input 1 of the first derivative is the grad_output
    assert ("reverse", 1) in {(f.check, f.in_idx) for f in second.failures}


#: sin whose backward is quadratic in grad_output, honestly (autograd sees it)
_SQUARED = _sin_with(lambda grad, cos: grad * grad * cos)


def test_an_honest_nonlinear_backward_passes_gradgrad_as_torchs_does():
    # its double backward is the true derivative of its (wrong) first derivative:
    # gradgrad passes, as torch's does; the reverse check's scaling catches the backward
    x = _point((0.3, -1.2, 2.0))
    assert torch.autograd.gradgradcheck(_SQUARED, (x,), raise_exception=False)
    with shared():
        reverse = gradcheck.check(_SQUARED, (x,), precise=True)
        second = gradcheck.check(_SQUARED, (x,), precise=True, order=2)
    assert {f.check for f in reverse.failures} == {"scaling"}
    assert second.passed, second.message()


def test_gradgrad_takes_the_reverse_checks_jacobian_for_its_grad_output_block():
    x = _point((0.3, -1.2, 2.0))
    alone = gradcheck.check(torch.sin, (x,), precise=True, order=2, seed=3)
    with shared():
        gradcheck.check(torch.sin, (x,), precise=True)
        second = gradcheck.check(torch.sin, (x,), precise=True, order=2, seed=3)
    assert alone.passed and second.passed
    assert torch.autograd.gradgradcheck(torch.sin, (x,), raise_exception=False)
    # only the columns of x are differenced now
    assert second.counts["function"] < alone.counts["function"]
    # the block in the grad_output is d/dv of the vjp, by torch: diag(cos x)
    v = torch.zeros(3, dtype=torch.float64)
    in_v = torch.autograd.functional.jacobian(
        lambda v: torch.autograd.grad(torch.sin(x), x, v, create_graph=True)[0], v).numpy()
    assert np.allclose(second.jacobians["numerical"][0, 1], in_v, rtol=0, atol=1e-15)
    assert np.allclose(alone.jacobians["numerical"][0, 1], in_v, rtol=1e-9, atol=1e-12)


def test_another_point_differences_its_grad_output_block():
    x = _point((0.3, -1.2, 2.0))
    moved = (x.detach() + 0.5).requires_grad_()
    alone = gradcheck.check(torch.sin, (moved,), precise=True, order=2, seed=3)
    with shared():
        gradcheck.check(torch.sin, (x,), precise=True)
        second = gradcheck.check(torch.sin, (moved,), precise=True, order=2, seed=3)
    assert second.counts["function"] == alone.counts["function"]
