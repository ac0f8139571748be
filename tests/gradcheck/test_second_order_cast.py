"""A second-order check of a function whose outputs stay narrow at float64
inputs (a cast inside: ``x.to(torch.complex64)``, PyTorch's ``cfloat``,
``bfloat16``, ``half`` ops). Autograd rounds the grad_outputs of its float64
run to those outputs, so differences of that run step on the narrow dtype's
stairs: the grad_output block read 0 (or 1.0018) where the first derivative
``Re(v)`` has exactly 1, and the check blamed a right vjp. Such a run is not
taken as the float64 run (``lowprec.widening.widened``); the differences are
taken in the dtype, and a wrong second derivative behind a cast still fails.
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the casts are torch's; torch is not installed")

from adcheck import gradcheck  # noqa: E402


def _x():
    return torch.tensor([0.7, -1.3, 0.2], dtype=torch.float64, requires_grad=True)


def _v(dtype):
    values = np.random.default_rng(2).uniform(-1, 1, (2, 3))
    v = torch.tensor(values[0] + 1j * values[1]) if dtype.is_complex else torch.tensor(values[0])
    return v.to(dtype).requires_grad_()


@pytest.mark.parametrize("dtype", [torch.complex64, torch.float32])
def test_a_cast_passes_and_its_grad_output_block_is_the_identity(dtype):
    x, v = _x(), _v(dtype)
    # the first derivative, independently: the real part of v in x's dtype
    (g,) = torch.autograd.grad(x.to(dtype), x, v)
    assert torch.equal(g, v.real.double() if dtype.is_complex else v.double())
    report = gradcheck.check(lambda t: t.to(dtype), (x,), order=2, precise=True,
                             grad_outputs=(v,), seed=0)
    assert report.passed, report.message()
    numerical = report.jacobians["numerical"].blocks[0, 1]
    # d Re(v_k) / d(v_j): 1 on the real part of the same element, 0 elsewhere
    expected = np.zeros((3, 6 if dtype.is_complex else 3))
    for k in range(3):
        expected[k, 2 * k if dtype.is_complex else k] = 1.0
    assert np.allclose(numerical, expected, atol=1e-4)


def test_a_cast_to_bfloat16_is_refused_not_passed():
    # bfloat16's differences trust each value to 4 of its units of roundoff: every
    # entry's tolerance exceeds the entry, so no wrong second derivative could fail
    # (tests/gradcheck/test_indtype_unresolved.py); it used to pass
    with pytest.raises(gradcheck.UncheckableError, match="bfloat16 resolve nothing"):
        gradcheck.check(lambda t: t.to(torch.bfloat16), (_x(),), order=2, precise=True,
                        grad_outputs=(_v(torch.bfloat16),), seed=0)


class _CastWrongSecond(torch.autograd.Function):
    """x.float() whose backward has the right value and a wrong derivative in x
    (0.5 g where the truth is 0)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.float()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad.double() * (1 + 0.5 * (x - x.detach()))


def test_a_wrong_second_derivative_behind_a_cast_still_fails():
    x = _x()
    assert torch.autograd.gradcheck(_CastWrongSecond.apply, (x,), atol=1e-5, rtol=1e-3,
                                    eps=1e-3)    # the first derivative is right (float32 out)
    report = gradcheck.check(_CastWrongSecond.apply, (x,), order=2, precise=True,
                             grad_outputs=(_v(torch.float32),), seed=0)
    assert not report.passed
    failure = report.failures[0]
    assert failure.in_idx == 0        # d/dx, where 0.5 g is planted, not the grad_output
