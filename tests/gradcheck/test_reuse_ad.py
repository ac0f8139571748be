"""Inside ``reuse.shared`` a sample's reference check takes the AD Jacobians its
reverse and forward checks built at the same point (``gradcheck.core.reuse_ad``),
and its gradgrad check the reverse check's Jacobian for its block in the
grad_outputs (``gradcheck.core.reuse_gg``); neither loses a failure it reports
when it builds its own: reentrancy, a grad_output written in place, a backward
not linear in its grad_output are judged as before. Each verdict is
cross-checked against torch (its Jacobians, gradcheck, gradgradcheck, the
grad_output after a backward)."""
import mpmath
import numpy as np
import pytest

from adcheck import gradcheck
from adcheck.gradcheck.core.reuse import shared

torch = pytest.importorskip("torch", reason="the planted bugs are torch.autograd.Functions")

SIN = lambda x: np.vectorize(mpmath.sin, otypes=[object])(x)  # noqa: E731


def _point(values=(0.3, -1.2, 2.0, 0.7)):
    return torch.tensor(values, dtype=torch.float64, requires_grad=True)


def _sample(func, x, forward: bool = True):
    """The first-order checks of one sample, as a sweep runs them in a row
    (``forward``: the function has a jvp)."""
    reverse = gradcheck.check(func, (x,), precise=True)
    fwd = gradcheck.check(func, (x,), precise=True, check_forward_ad=True,
                          check_backward_ad=False) if forward else None
    ref = gradcheck.check(func, (x,), reference=SIN, check_forward_ad=forward)
    return reverse, fwd, ref


def test_the_reference_check_takes_both_ad_jacobians_and_they_are_torchs():
    x = _point()
    alone = _sample(torch.sin, x)[2]
    with shared():
        reverse, forward, ref = _sample(torch.sin, x)
    assert reverse.passed and forward.passed and ref.passed and alone.passed
    # no product of the build, nor of its repeat, is made again: only the other checks'
    assert ref.counts["vjp"] < alone.counts["vjp"] and ref.counts["jvp"] < alone.counts["jvp"]
    truth = torch.autograd.functional.jacobian(torch.sin, x.detach()).numpy()
    for mode in ("reverse", "forward"):
        assert np.allclose(ref.jacobians[mode][0, 0], truth, rtol=0, atol=1e-15)
        assert np.array_equal(ref.jacobians[mode][0, 0], alone.jacobians[mode][0, 0])


def test_another_point_or_memory_budget_builds_its_own():
    x = _point()
    alone = _sample(torch.sin, x)[2]
    with shared():
        _sample(torch.sin, x)
        moved = gradcheck.check(torch.sin, ((x.detach() + 0.5).requires_grad_(),),
                                reference=SIN, check_forward_ad=True)
        budget = gradcheck.check(torch.sin, (x,), reference=SIN, check_forward_ad=True,
                                 memory_budget=2 ** 20)
    assert moved.counts["vjp"] == alone.counts["vjp"]
    assert budget.counts["vjp"] == alone.counts["vjp"]


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


def _drifting():
    """sin whose backward adds 1e-3 more each call: not reentrant."""
    calls = {"n": 0}

    def backward(grad, cos):
        calls["n"] += 1
        return grad * (cos + 1e-3 * calls["n"])
    return _sin_with(backward)


def test_a_backward_that_is_not_reentrant_fails_the_reference_check_as_before():
    x = _point()
    with pytest.raises(Exception, match="(?i)reentrant|nondetermin|backward"):
        torch.autograd.gradcheck(_drifting(), (x,), nondet_tol=0.0)     # the independent judge
    alone = _sample(_drifting(), x, forward=False)[2]
    with shared():
        reverse, _, ref = _sample(_drifting(), x, forward=False)
    for report in (alone, reverse, ref):
        assert "reentrant" in {f.check for f in report.failures}, report.message()


def _writes_its_grad_output():
    """sin whose backward doubles the grad_output it was handed, in place (and
    divides the result by two: the formula itself is right)."""
    def backward(grad, cos):
        grad.mul_(2.0)
        return grad * cos / 2.0
    return _sin_with(backward)


def test_a_backward_that_writes_its_grad_output_fails_the_reference_check_as_before():
    x = _point()
    g = torch.ones(4, dtype=torch.float64)
    _writes_its_grad_output()(x).backward(g)
    assert torch.equal(g, torch.full((4,), 2.0, dtype=torch.float64))   # torch shows the write
    alone = _sample(_writes_its_grad_output(), x, forward=False)[2]
    with shared():
        reverse, _, ref = _sample(_writes_its_grad_output(), x, forward=False)
    for report in (alone, reverse, ref):
        assert "grad-output-mutation" in {f.check for f in report.failures}, report.message()
    assert ref.counts["vjp"] == alone.counts["vjp"]    # its build was not kept: made again


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
