"""A function of a symmetric matrix that reads one triangle (eigh, eigvalsh,
cholesky), checked at a matrix that is not symmetric: ``randn(4, 4)``, the
first input a newcomer gives ``adcheck check torch.linalg:eigvalsh``.

Its check fails, rightly: moving an entry above the diagonal changes no
output, while the formula (the derivative of a function of the symmetric
matrix) spreads each derivative over an entry and its mirror. The failure
said "analytical couples entries that do not depend on each other: a
reduction or a broadcast over the wrong axis", blaming a formula that is
right. It now says that the function reads one triangle and how to check it
(``f(a + a.mT)``, as PyTorch's tests do), which passes."""
from __future__ import annotations

import numpy as np
import pytest

from adcheck import refengine
from adcheck.gradcheck import check
from adcheck.refengine.autograd import Function


def _matrix(E, n=4, dtype="float64", seed=0, batch=()):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(batch + (n, n))
    if dtype == "complex128":
        a = a + 1j * rng.standard_normal(batch + (n, n))
    return E.tensor(a).requires_grad_()


def _failures(report, check_name):
    return [r for r in report.failures if r.check == check_name]


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("batch", [(), (2,)])
def test_eigvalsh_at_a_matrix_that_is_not_symmetric_is_said_to_read_one_triangle(
        E, dtype, batch):
    a = _matrix(E, dtype=dtype, batch=batch)
    report = check(lambda a: E.linalg.eigvalsh(a), (a,), check_forward_ad=True,
                   explore=False)
    assert not report.passed
    for mode in ("reverse", "forward"):
        (failure,) = _failures(report, mode)
        assert failure.diagnosis.startswith(
            "the function reads only the lower triangle of input 0"), failure.diagnosis
        assert "wrong axis" not in failure.diagnosis
        assert "a + a.m" in failure.diagnosis


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_the_fix_it_gives_passes(E, dtype):
    a = _matrix(E, dtype=dtype)
    conj = (lambda m: m.mH) if dtype == "complex128" else (lambda m: m.mT)
    report = check(lambda a: E.linalg.eigvalsh(a + conj(a)), (a,), check_forward_ad=True,
                   explore=False)
    assert report.passed, report.failures


def test_the_upper_triangle_is_named_too():
    torch = pytest.importorskip("torch", reason="torch's UPLO option (pip install torch)")
    a = _matrix(torch)
    report = check(lambda a: torch.linalg.eigvalsh(a, UPLO="U"), (a,),
                   explore=False)
    (failure,) = _failures(report, "reverse")
    assert failure.diagnosis.startswith("the function reads only the upper triangle")
    assert "zero below the diagonal" in failure.diagnosis


def test_cholesky_of_a_positive_definite_matrix_that_is_not_symmetric(E):
    rng = np.random.default_rng(1)
    b = rng.standard_normal((4, 4))
    near = b @ b.T + 4 * np.eye(4) + 0.3 * rng.standard_normal((4, 4))
    a = E.tensor(near).requires_grad_()
    report = check(lambda a: E.linalg.cholesky(a), (a,), explore=False)
    (failure,) = _failures(report, "reverse")
    assert "reads only the lower triangle" in failure.diagnosis


class DoubledEigvalsh(Function):
    """eigvalsh with its vjp twice too large: wrong at any input."""

    @staticmethod
    def forward(ctx, a):
        w, v = refengine.linalg.eigh(a)
        ctx.save_for_backward(v)
        return w

    @staticmethod
    def backward(ctx, g):
        (v,) = ctx.saved_tensors
        return 2 * (v * g.unsqueeze(-2)) @ v.mT


def test_a_wrong_formula_of_a_triangle_read_is_not_excused():
    a = _matrix(refengine)
    report = check(DoubledEigvalsh.apply, (a,), explore=False)
    (failure,) = _failures(report, "reverse")
    assert "triangle" not in (failure.diagnosis or "")
    # and at a symmetric input it still fails
    s = _matrix(refengine)
    s = (s + s.mT).detach().requires_grad_()
    assert not check(DoubledEigvalsh.apply, (s,), explore=False).passed
