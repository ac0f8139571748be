"""The adjoint identity's tightness, and nondet_tol with PyTorch's meaning."""
from __future__ import annotations

import numpy as np
import pytest

from gradcheck import check, gradcheck

torch = pytest.importorskip("torch", reason="the Functions under check are torch Functions")

NOISE = np.random.default_rng()


def exp_function(jvp_factor=1.0, noise=0.0):
    class Exp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = torch.exp(x)
            ctx.save_for_backward(y)
            ctx.save_for_forward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            y, = ctx.saved_tensors
            jitter = torch.from_numpy(noise * NOISE.standard_normal(tuple(y.shape)))
            return g * y * (1 + jitter)

        @staticmethod
        def jvp(ctx, t):
            y, = ctx.saved_tensors
            return t * y * jvp_factor
    return Exp.apply


X = torch.tensor([0.3, -0.8, 1.2, 0.1], dtype=torch.float64)


@pytest.mark.parametrize("relative", [1e-6, 1e-9, 1e-10])
def test_adjoint_identity_sees_mode_mismatch_far_below_rtol(relative):
    f = exp_function(jvp_factor=1 + relative)
    report = check(f, (X.clone().requires_grad_(),), check_forward_ad=True, seed=0)
    assert [r.check for r in report.failures] == ["adjoint"], report.message()


def test_adjoint_identity_passes_correct_formulas_on_many_probes():
    f = exp_function()
    report = check(f, (X.clone().requires_grad_(),), check_forward_ad=True, probes=64, seed=1)
    assert report.passed, report.message()


def test_nondet_tol_accepts_bounded_noise_like_pytorch():
    f = exp_function(noise=1e-9)
    x = X.clone().requires_grad_()
    with pytest.raises(RuntimeError):
        torch.autograd.gradcheck(f, (x,))
    assert torch.autograd.gradcheck(f, (x,), nondet_tol=1e-6)
    report = check(f, (x,), seed=0)
    assert not report.passed and "nondeterministic" in report.diagnosis
    assert gradcheck(f, (x,), nondet_tol=1e-6, check_forward_ad=True)
