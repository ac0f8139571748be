"""One tensor passed as several inputs (``check(attention, (x, x, x))``).

The finite differences move each argument on its own; the AD side took the
derivative through the one tensor, the sum of every use's: a correct
function failed, off by the other uses' share. Each repeat is now checked
as a copy of its own (with a warning): each argument's derivative on its
own, which also finds a backward that swaps two arguments' gradients, which
torch.autograd.gradcheck, checking their sum through the shared tensor,
passes."""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

import adcheck.refengine as R  # noqa: E402
from adcheck.gradcheck import check  # noqa: E402

ALIASED = "the same tensor is passed more than once"


class SwappedGrads(torch.autograd.Function):
    """``a * b**2`` whose backward returns each argument the other's gradient."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b * b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * 2 * a * b, g * b * b


def _x():
    return torch.tensor(np.random.default_rng(0).uniform(0.5, 2.0, 5), requires_grad=True)


def test_a_correct_function_of_one_tensor_twice_passes_with_a_warning():
    x = _x()
    assert torch.autograd.gradcheck(lambda a, b: a * b.sin(), (x, x))
    with pytest.warns(UserWarning, match=ALIASED + r" \(input 1 is input 0\)"):
        report = check(lambda a, b: a * b.sin(), (x, x), seed=0)
    assert report.passed, str(report)
    with pytest.warns(UserWarning, match=ALIASED):
        assert check(lambda a, b: a * b.sin(), (x, x), seed=0, order=2, precise=True).passed


def test_swapped_gradients_fail_as_they_do_on_separate_tensors():
    x = _x()
    # torch: passes through the shared tensor (the sum is right), fails on copies
    assert torch.autograd.gradcheck(SwappedGrads.apply, (x, x))
    copy = x.detach().clone().requires_grad_()
    assert not torch.autograd.gradcheck(SwappedGrads.apply, (x, copy), raise_exception=False)
    with pytest.warns(UserWarning, match=ALIASED):
        report = check(SwappedGrads.apply, (x, x), seed=0)
    assert not report.passed
    assert {f.in_idx for f in report.failures if f.check == "reverse"} == {0, 1}


def test_refengine_and_three_uses():
    x = R.tensor(np.random.default_rng(1).standard_normal((2, 3)), dtype=R.float64,
                 requires_grad=True)
    with pytest.warns(UserWarning, match=ALIASED + r" \(input 1 is input 0, 2 is input 0\)"):
        report = check(lambda q, k, v: R.softmax(q @ k.T, -1) @ v, (x, x, x), seed=0,
                       precise=True)
    assert report.passed, str(report)
    # the caller's tensor is left as it was: no gradient, the same values
    assert x.grad is None


def test_jax_too():
    jax = pytest.importorskip("jax", reason="the JAX adapter's case needs JAX installed")
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        x = jax.numpy.array([0.5, 1.0, 2.0])
        with pytest.warns(UserWarning, match=ALIASED):
            report = check(lambda a, b: a * jax.numpy.sin(b), (x, x), seed=0)
    finally:
        jax.config.update("jax_enable_x64", previous)
    assert report.passed, str(report)
