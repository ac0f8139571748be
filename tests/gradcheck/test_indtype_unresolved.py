"""A kernel that runs only in bfloat16 is differenced in bfloat16, whose
differences err by a few percent; with a tolerance several times their error
estimate, every entry of a small square's Jacobian was within its own
tolerance, and a backward wrong by half passed ``precise=True``. A check that
cannot fail is no pass: it now says so (``UncheckableError``, naming the
kernel check against a float64 reference, which judges it), while a
comparison that resolves anything (float16's) keeps its verdict.

What is right is decided independently: the formulas below are the exact
derivatives of ``x * x`` and ``3 x`` (and the wrong ones are not).
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the kernels are torch Functions; torch is not "
                                            "installed")

from adcheck import gradcheck  # noqa: E402


def _only_in(dtype, forward, backward):
    """A kernel refusing float64 (as a fused kernel without a float64 build does)."""
    class Kernel(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            if x.dtype != dtype:
                raise TypeError(f"this kernel runs in {dtype} only")
            ctx.save_for_backward(x)
            return forward(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return backward(x, g)
    return Kernel.apply


def _x(dtype):
    values = np.random.default_rng(0).uniform(0.5, 2.0, (3, 4)) * \
        np.random.default_rng(1).choice([-1.0, 1.0], (3, 4))
    return torch.tensor(values, dtype=dtype, requires_grad=True)


@pytest.mark.parametrize("slope", [2.0, 3.0])
def test_a_bfloat16_square_resolves_nothing_and_is_not_passed(slope):
    kernel = _only_in(torch.bfloat16, lambda x: x * x, lambda x, g: slope * x * g)
    with pytest.raises(gradcheck.UncheckableError, match="resolve nothing here") as raised:
        gradcheck.check(kernel, (_x(torch.bfloat16),), precise=True, seed=0)
    assert "raises TypeError on float64 inputs" in str(raised.value)   # why in bfloat16
    assert "kernels.check" in str(raised.value)                        # what to do


@pytest.mark.parametrize("slope,passes", [(2.0, True), (3.0, False)])
def test_a_float16_square_is_judged(slope, passes):
    kernel = _only_in(torch.float16, lambda x: x * x, lambda x, g: slope * x * g)
    report = gradcheck.check(kernel, (_x(torch.float16),), precise=True, seed=0)
    assert report.passed is passes, report.message()


@pytest.mark.parametrize("slope", [3.0, 4.0])
def test_even_a_linear_bfloat16_kernel_resolves_nothing(slope):
    # its differences are exact, but each value is trusted only to 4 units of
    # bfloat16's roundoff (indtype.NOISE_FLOOR_U), over steps a quarter of x
    kernel = _only_in(torch.bfloat16, lambda x: 3 * x, lambda x, g: slope * g)
    with pytest.raises(gradcheck.UncheckableError, match="resolve nothing here"):
        gradcheck.check(kernel, (_x(torch.bfloat16),), precise=True, seed=0)


@pytest.mark.parametrize("slope,passes", [(2.0, True), (2.5, False), (3.0, False)])
def test_the_kernel_check_the_refusal_names_judges_it(slope, passes):
    from adcheck.gradcheck import kernels
    kernel = _only_in(torch.bfloat16, lambda x: x * x, lambda x, g: slope * x * g)
    report = kernels.check(kernel, (_x(torch.bfloat16),), against=lambda t: t * t)
    assert report.passed is passes, kernels.summary(report)
