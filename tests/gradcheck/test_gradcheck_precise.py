"""precise=True: no false alarms on correct torch ops, 1e-6 errors caught.

The correct formulas are torch's own (an independent oracle); the wrong ones
are those formulas scaled by 1 + 1e-6 in one entry or everywhere.
"""
from __future__ import annotations

import numpy as np
import pytest

from gradcheck import check

torch = pytest.importorskip("torch", reason="the precise sweep uses torch's formulas")


def rand(*shape, dtype=torch.float64, low=-1.0, high=1.0, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.rand(*shape, dtype=dtype, generator=gen) * (high - low) + low
    return x.requires_grad_()


def spd(n, seed=0):
    a = rand(n, n, seed=seed).detach()
    return (a @ a.T + n * torch.eye(n, dtype=torch.float64)).requires_grad_()


C = torch.complex128
OPS = [
    ("sin", torch.sin, lambda s: (rand(5, seed=s),)),
    ("log_small", torch.log, lambda s: (rand(5, low=0.01, high=0.1, seed=s),)),
    ("sqrt_small", torch.sqrt, lambda s: (rand(5, low=1e-3, high=2, seed=s),)),
    ("tan", torch.tan, lambda s: (rand(5, low=-1.4, high=1.4, seed=s),)),
    ("lgamma", torch.lgamma, lambda s: (rand(5, low=0.1, high=6, seed=s),)),
    ("erf", torch.erf, lambda s: (rand(5, low=-3, high=3, seed=s),)),
    ("expm1", torch.expm1, lambda s: (rand(5, low=-1e-3, high=1e-3, seed=s),)),
    ("pow", torch.pow, lambda s: (rand(4, low=0.5, high=2, seed=s), rand(4, seed=s + 1))),
    ("atan2", torch.atan2, lambda s: (rand(4, seed=s), rand(4, seed=s + 1))),
    ("large_scale_exp", torch.exp, lambda s: (rand(4, low=20, high=30, seed=s),)),
    ("inv", torch.linalg.inv, lambda s: (spd(3, s),)),
    ("det", torch.linalg.det, lambda s: (rand(3, 3, seed=s),)),
    ("cholesky", lambda a: torch.linalg.cholesky(a @ a.mT + 3 * torch.eye(3)),
     lambda s: (rand(3, 3, seed=s),)),
    ("eigh_values", lambda a: torch.linalg.eigvalsh(a + a.T), lambda s: (rand(3, 3, seed=s),)),
    ("logsumexp", lambda x: torch.logsumexp(x, 0), lambda s: (rand(6, seed=s),)),
    ("c_exp", torch.exp, lambda s: (rand(4, dtype=C, seed=s),)),
    ("c_log", torch.log, lambda s: (rand(4, dtype=C, low=0.1, seed=s),)),
    ("c_abs", torch.abs, lambda s: (rand(4, dtype=C, seed=s),)),
    ("c_angle", torch.angle, lambda s: (rand(4, dtype=C, seed=s),)),
    ("c_sqrt", torch.sqrt, lambda s: (rand(4, dtype=C, low=0.1, seed=s),)),
    ("c_reciprocal", torch.reciprocal, lambda s: (rand(4, dtype=C, low=0.2, seed=s),)),
    ("c_inv", torch.linalg.inv, lambda s: (rand(3, 3, dtype=C, seed=s) + 2 * torch.eye(3),)),
    ("c_mixed_mul", torch.mul, lambda s: (rand(3, seed=s), rand(3, dtype=C, seed=s + 1))),
    ("c_real_of_product", lambda a, b: (a * b.conj()).real,
     lambda s: (rand(3, dtype=C, seed=s), rand(3, dtype=C, seed=s + 1))),
]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("name,op,make", OPS, ids=[o[0] for o in OPS])
def test_correct_torch_op_passes_precise(name, op, make, seed):
    report = check(op, make(seed), precise=True, check_forward_ad=True, seed=seed)
    assert report.passed, report.message()


class ScaledInv(torch.autograd.Function):
    """linalg.inv whose vjp is off by a factor 1 + REL in entry ENTRY (or all)."""

    REL, ENTRY = 1e-6, None

    @staticmethod
    def forward(ctx, a):
        inv = torch.linalg.inv(a)
        ctx.save_for_backward(inv)
        return inv

    @staticmethod
    def backward(ctx, g):
        inv, = ctx.saved_tensors
        grad = -inv.mH @ g @ inv.mH
        scale = torch.ones_like(grad)
        if ScaledInv.ENTRY is None:
            scale = scale * (1 + ScaledInv.REL)
        else:
            scale[ScaledInv.ENTRY] = 1 + ScaledInv.REL
        return grad * scale


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
@pytest.mark.parametrize("entry", [None, (1, 2)])
def test_relative_error_1e_6_in_a_matrix_op_is_caught(dtype, entry):
    ScaledInv.ENTRY = entry
    a = (rand(3, 3, dtype=dtype, seed=3).detach() + 2 * torch.eye(3)).requires_grad_()
    assert check(ScaledInv.apply, (a,), seed=0).passed, "1e-6 is far below the default rtol"
    report = check(ScaledInv.apply, (a,), precise=True, seed=0)
    assert not report.passed
    if entry is None:
        assert "1.000001 times" in report.diagnosis
    failing = report.failures[0]
    assert failing.check == "reverse" and failing.max_error > failing.tolerance


def test_richardson_error_estimate_bounds_the_true_error():
    # d/dx sin at known points: the true error is measurable exactly
    from gradcheck import numerical_jacobian
    x = torch.tensor([0.3, 1.1, -2.0], dtype=torch.float64, requires_grad=True)
    jac = numerical_jacobian(torch.sin, (x,), precise=True)
    true = np.diag(np.cos(x.detach().numpy()))
    actual_error = np.abs(jac[0, 0] - true)
    assert np.all(actual_error <= jac.errors[0, 0] + 1e-300)
    assert np.max(jac.errors[0, 0]) < 1e-9
