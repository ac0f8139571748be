"""The adjoint identity's tightness, and nondet_tol with PyTorch's meaning.

The Functions (an exp whose jvp is off by a relative 1e-6 to 1e-10, or whose
vjp is noisy) come from the zoo and run on each engine (the ``E`` fixture);
PyTorch's own gradcheck is the oracle for what nondet_tol accepts.
"""
from __future__ import annotations

import gradcheck_zoo as zoo
import numpy as np
import pytest

from adcheck.gradcheck import check, gradcheck

X = np.array([0.3, -0.8, 1.2, 0.1])


def x(E):
    return E.from_numpy(X.copy()).requires_grad_()


@pytest.mark.parametrize("relative", [1e-6, 1e-9, 1e-10])
def test_adjoint_identity_sees_mode_mismatch_far_below_rtol(E, relative):
    f = zoo.exp_with(E, jvp_factor=1 + relative)
    report = check(f, (x(E),), check_forward_ad=True, seed=0)
    assert [r.check for r in report.failures] == ["adjoint"], report.message()


def test_adjoint_identity_passes_correct_formulas_on_many_probes(E):
    report = check(zoo.exp_with(E), (x(E),), check_forward_ad=True, probes=64, seed=1)
    assert report.passed, report.message()


def test_nondet_tol_accepts_bounded_noise(E):
    f = zoo.exp_with(E, noise=1e-9)
    report = check(f, (x(E),), seed=0)
    assert not report.passed and "nondeterministic" in report.diagnosis
    assert gradcheck(f, (x(E),), nondet_tol=1e-6, check_forward_ad=True)


def test_pytorch_gives_nondet_tol_the_same_meaning():
    torch = pytest.importorskip("torch", reason="torch's own gradcheck is the oracle here")
    f = zoo.exp_with(torch, noise=1e-9)
    with pytest.raises(RuntimeError):
        torch.autograd.gradcheck(f, (x(torch),))
    assert torch.autograd.gradcheck(f, (x(torch),), nondet_tol=1e-6)
