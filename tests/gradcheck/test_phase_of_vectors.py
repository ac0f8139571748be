"""Outputs defined up to a phase per vector (eigenvectors, singular vectors)
checked as they are: the function's vectors (LAPACK's phase) and the
formula's derivative (another phase) differ by ``i theta_k v_k``. The
failure said "analytical couples entries that do not depend on each other:
a reduction or a broadcast over the wrong axis"; it now names the phase, and
a function of the vectors that does not depend on it passes."""
from __future__ import annotations

import numpy as np
import pytest

from adcheck import refengine
from adcheck.gradcheck import check
from adcheck.gradcheck.verdict.phase import phase_only
from adcheck.refengine.autograd import Function


def _complex_matrix(E, seed=1, shape=(4, 4)):
    rng = np.random.default_rng(seed)
    return E.tensor(rng.standard_normal(shape) + 1j * rng.standard_normal(shape)) \
        .requires_grad_()


def test_hermitian_eigenvectors_fail_naming_their_phase(E):
    a = _complex_matrix(E)
    report = check(lambda a: E.linalg.eigh(a + a.mH), (a,), check_forward_ad=True,
                   explore=False)
    for mode in ("reverse", "forward"):
        (failure,) = [f for f in report.failures if f.check == mode]
        assert failure.out_idx == 1
        assert "only by a change of phase of each column of output 1" in failure.diagnosis
        assert "wrong axis" not in failure.diagnosis


def test_what_does_not_depend_on_the_phase_passes(E):
    a = _complex_matrix(E)
    report = check(lambda a: E.linalg.eigh(a + a.mH)[1].abs(), (a,), check_forward_ad=True,
                   explore=False)
    assert report.passed, report.message()


def test_torch_eig_too():
    torch = pytest.importorskip("torch", reason="torch's eig (pip install torch)")
    report = check(torch.linalg.eig, (_complex_matrix(torch),), explore=False)
    (failure,) = report.failures
    assert failure.out_idx == 1 and "change of phase" in failure.diagnosis


def _phase_moved(kind):
    """A real Jacobian block of a complex 3 x 3 output, and the same block with
    each vector's change of phase added (column vectors, or row vectors)."""
    rng = np.random.default_rng(7)
    value = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    actual = rng.standard_normal((18, 5))
    theta = rng.standard_normal((3, 5))       # per vector, per input direction
    vectors = value if kind == "column" else value.T
    change = 1j * vectors[:, :, None] * theta[None, :, :]      # (m, k, input)
    if kind == "row":
        change = change.swapaxes(0, 1)
    moved = np.empty_like(actual)
    flat = change.reshape(9, 5)
    moved[0::2], moved[1::2] = flat.real, flat.imag
    return value, actual, actual + moved


@pytest.mark.parametrize("kind", ["column", "row"])
def test_the_shape_is_a_change_of_phase_of_each_vector(kind):
    value, actual, expected = _phase_moved(kind)
    assert phase_only(expected, actual, value) == kind
    assert phase_only(actual, actual, value) is None          # (nothing differs)
    scaled = expected.copy()
    scaled[0] *= 1.5            # one entry off besides: the phase no longer explains it
    assert phase_only(scaled, actual, value) is None


class UnitColumns(Function):
    """a / |a| column by column, with a vjp that drops the phase part of the
    derivative (the complex projection y y^H where Re(y^H g) belongs): a unique
    output, wrong by exactly a change of each column's phase."""

    @staticmethod
    def forward(ctx, a):
        r = (a * a.conj()).real.sum(-2, keepdim=True).sqrt()
        y = a / r
        ctx.save_for_backward(y, r)
        return y

    @staticmethod
    def backward(ctx, g):
        y, r = ctx.saved_tensors
        return (g - y * (y.conj() * g).sum(-2, keepdim=True)) / r


def test_a_unique_output_wrong_by_its_phase_is_told_both_ways():
    report = check(UnitColumns.apply, (_complex_matrix(refengine, shape=(3, 2)),),
                   precise=True, explore=False)
    (failure,) = [f for f in report.failures if f.check == "reverse"]
    assert "change of phase of each column" in failure.diagnosis
    assert "misses the part of the derivative that turns each column's phase" in \
        failure.diagnosis


def test_torchs_refusal_of_a_phase_dependent_cotangent_says_what_to_check():
    # (torch's svd backward raises on the check's unit cotangents of U; the error
    # said "check the backward formula runs for these shapes and dtypes")
    torch = pytest.importorskip("torch", reason="torch's svd (pip install torch)")
    from adcheck.gradcheck.errors import GradcheckError
    a = _complex_matrix(torch, shape=(3, 4))
    with pytest.raises(GradcheckError) as raised:
        check(lambda a: torch.linalg.svd(a, full_matrices=False), (a,), explore=False)
    assert "defined up to a phase each" in str(raised.value)
    assert "check the backward formula runs" not in str(raised.value)


class ZeroPhaseGrad(Function):
    """exp(1j * w) of real angles w (in place of a phase's derivative) with a vjp of
    zeros: found on torchkbnufft's k-space trajectory, whose gradient is zero."""

    @staticmethod
    def forward(ctx, w):
        # (one sample of a trajectory per column: each output entry turns with its column)
        ctx.shape = w.shape
        return refengine.exp(1j * (w[0] + 2 * w[1])).reshape(1, 1, -1)

    @staticmethod
    def backward(ctx, g):
        return refengine.zeros(ctx.shape, dtype=refengine.float64)


def test_a_zero_vjp_is_said_to_be_zero_not_a_phase():
    w = refengine.tensor(np.random.default_rng(0).uniform(-3, 3, (2, 5)),
                         dtype=refengine.float64, requires_grad=True)
    report = check(ZeroPhaseGrad.apply, (w,), precise=True, explore=False)
    (failure,) = report.failures
    assert failure.diagnosis.startswith("analytical is zero: the vjp returns no gradient")
