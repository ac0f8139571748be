"""Decompositions: qr, eigh, svd (and svdvals through svd).

Each jvp follows from differentiating the defining identity (``A = QR``,
``A = V diag(L) V^H``, ``A = U diag(S) V^H``) with the gauge fixed, and
each vjp is its adjoint under ``<X, Y> = Re tr(X^H Y)``. Eigenvectors and
singular vectors are defined up to a phase (a sign for real input): the
rules are correct for losses that do not depend on that choice, as
PyTorch documents; the eigenvalues (singular values) must be distinct.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..batching.batched import NotBatchable
from ..batching.rules import matrices
from .dispatch import call
from .linalg import L, _square, diag_embed, solve
from .opdef import OPS, defop

QRResult = namedtuple("qr", ["Q", "R"])
EighResult = namedtuple("eigh", ["eigenvalues", "eigenvectors"])
SVDResult = namedtuple("svd", ["U", "S", "Vh"])


def _eye_mask(n):
    from .. import creation
    return creation.eye(n, dtype=None).bool()


def _right_inv(X, R):
    """``X R^{-1}`` for invertible ``R``."""
    return solve(R.mH, X.mH).mH


def _right_inv_h(X, R):
    """``X R^{-H}``."""
    return solve(R, X.mH).mH


# ----- qr: with C = Q^H dA R^{-1} and the skew-Hermitian O = Q^H dQ
# (O = tril(C,-1) - tril(C,-1)^H + i Im diag C), dR = (C - O) R and
# dQ = dA R^{-1} - Q (C - O). The vjp is (gQ + Q copyutl(N)) R^{-H} with
# N = gR R^H - Q^H gQ. For m < n, A = [X | Y] and R = [U | V = Q^H Y].
def _qr(A, mode="reduced"):
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           "'reduced' (default), 'r', or 'complete'")
    if mode == "r":
        return np.zeros((0,), dtype=A.dtype), np.linalg.qr(A, mode="r")
    Q, R = np.linalg.qr(A, mode=mode)
    return Q, R


def _qr_skew(C):
    low = C.tril(-1)
    O = low - low.mH
    if C.is_complex():
        O = O + diag_embed(C.diagonal(0, -2, -1).imag * 1j)
    return O


def _qr_square_jvp(A_t, Q, R):
    C = _right_inv(Q.mH.matmul(A_t), R)
    D = C - _qr_skew(C)
    return _right_inv(A_t, R) - Q.matmul(D), D.matmul(R)


def _qr_square_vjp(gQ, gR, Q, R):
    N = gR.matmul(R.mH) - Q.mH.matmul(gQ)
    M = N.triu(1) + N.mH.tril(-1) + diag_embed(N.diagonal(0, -2, -1).real.to(N.dtype))
    return _right_inv_h(gQ + Q.matmul(M), R)


def _qr_check(A, mode):
    m, n = A.shape[-2:]
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when "
                           "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to "
                           "differentiate through linalg.qr.")
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and "
                           "nrows > ncols.")
    return m, n


def _qr_vjp(grads, A, Q, R, mode):
    gQ, gR = grads
    m, n = _qr_check(A, mode)
    if m >= n:
        return _qr_square_vjp(gQ, gR, Q, R)
    Y, gV = A[..., :, m:], gR[..., :, m:]
    gX = _qr_square_vjp(gQ + Y.matmul(gV.mH), gR[..., :, :m], Q, R[..., :, :m])
    return call(OPS["cat"], [gX, Q.matmul(gV)], -1)


def _qr_jvp(A_t, A, Q, R, mode):
    m, n = _qr_check(A, mode)
    if m >= n:
        return _qr_square_jvp(A_t, Q, R)
    dQ, dU = _qr_square_jvp(A_t[..., :, :m], Q, R[..., :, :m])
    dV = dQ.mH.matmul(A[..., :, m:]) + Q.mH.matmul(A_t[..., :, m:])
    return dQ, call(OPS["cat"], [dU, dV], -1)


def _qr_rule(c):
    Q, R = matrices(c)
    if c.env["mode"] == "r":    # Q is an empty placeholder: one (empty) per example
        Q = Q.expand(c.size, 0)
    return Q, R


defop("linalg_qr", _qr, inputs=("A",), outputs=("Q", "R"), vjp={"A": _qr_vjp}, jvp=_qr_jvp,
      batch=_qr_rule, **L)


# ----- eigh: with X = V^H dA V, dL = Re diag X and dV = V (F o X),
# F_ij = 1/(L_j - L_i) off the diagonal, 0 on it. The vjp
# V (diag(gL) + F o V^H gV) V^H is made Hermitian (A is taken Hermitian).
def _eigh(A, UPLO="L"):
    _square("eigh", A)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    w, V = np.linalg.eigh(A, UPLO=UPLO)
    return w, V


def _gap_inverse(values, square: bool):
    """F_ij = 1/(v_j - v_i) (or 1/(v_j^2 - v_i^2)), zero on the diagonal."""
    if square:
        values = values * values
    E = values.unsqueeze(-2) - values.unsqueeze(-1)
    diag = _eye_mask(values.shape[-1])
    return E.masked_fill(diag, 1).reciprocal().masked_fill(diag, 0)


def _eigh_vjp(grads, eigenvalues, eigenvectors):
    gL, gV = grads
    V = eigenvectors
    F = _gap_inverse(eigenvalues, False)
    inner = diag_embed(gL.to(V.dtype)) + F * V.mH.matmul(gV)
    G = V.matmul(inner).matmul(V.mH)
    return 0.5 * (G + G.mH)


def _eigh_jvp(A_t, eigenvalues, eigenvectors):
    V = eigenvectors
    X = V.mH.matmul(A_t).matmul(V)
    F = _gap_inverse(eigenvalues, False)
    return X.diagonal(0, -2, -1).real, V.matmul(F * X)


defop("linalg_eigh", _eigh, inputs=("A",), outputs=("eigenvalues", "eigenvectors"),
      vjp={"A": _eigh_vjp}, jvp=_eigh_jvp, batch=matrices, **L)


# ----- svd (reduced): with P = U^H dA V, dS = Re diag P,
# dU = U (F o (P S + S P^H) + i Im diag(P)/S) + (I - U U^H) dA V S^{-1},
# dV = V (F o (S P + P^H S)) + (I - V V^H) dA^H U S^{-1}, F_ij = 1/(s_j^2 - s_i^2).
def _svd(A, full_matrices=True):
    if A.ndim < 2:
        raise RuntimeError("linalg.svd: The input tensor A must have at least 2 dimensions.")
    return tuple(np.linalg.svd(A, full_matrices=full_matrices))


def _svd_reduced(A, U, Vh, full_matrices):
    """U and V of the reduced decomposition: with ``full_matrices`` of a matrix
    that is not square, the first min(m, n) columns of U and rows of Vh (the
    rest are an arbitrary basis, whose derivatives torch ignores in the vjp
    and makes zero in the jvp)."""
    m, n = A.shape[-2:]
    if full_matrices and m != n:
        k = min(m, n)
        return U.narrow(-1, 0, k), Vh.narrow(-2, 0, k).mH
    return U, Vh.mH


def _padded(t, dim: int, like):
    """``t`` with zeros after it along ``dim`` up to ``like``'s size there."""
    have = t.shape[dim]
    if like.shape[dim] == have:
        return t
    return call(OPS["cat"], [t, like.narrow(dim, have, like.shape[dim] - have) * 0], dim)


def _all_zero(t) -> bool:
    try:
        return not bool((t != 0).sum())
    except NotBatchable:    # under vmap each batch element has its own: the full rule
        return False


def _svd_vjp(grads, A, U, S, Vh, full_matrices):
    gU, gS, gVh = grads
    U, V = _svd_reduced(A, U, Vh, full_matrices)
    gU, gVh = gU.narrow(-1, 0, U.shape[-1]), gVh.narrow(-2, 0, V.shape[-1])
    if _all_zero(gU) and _all_zero(gVh):
        # S's cotangent alone (U and Vh unused come here as zeros; torch's gU, gVh are
        # undefined then): U diag(gS) V^H, what the rule below gives but for F's 1/0
        # times 0 at repeated, zero or underflowed values (s^2 of 1e-300 is 0: NaN)
        return _values_vjp(gS, U, V.mH)
    gV = gVh.mH
    F = _gap_inverse(S, True)
    Sc = S.to(U.dtype)
    J, K = U.mH.matmul(gU), V.mH.matmul(gV)
    inner = ((F * (J - J.mH)) * Sc.unsqueeze(-2) + Sc.unsqueeze(-1) * (F * (K - K.mH))
             + diag_embed(gS.to(U.dtype)))
    if U.is_complex():
        inner = inner + diag_embed(J.diagonal(0, -2, -1).imag / S * 1j)
    gA = U.matmul(inner).matmul(V.mH)
    gU_perp = gU - U.matmul(J)                   # (I - U U^H) gU
    gV_perp = gV - V.matmul(K)
    gA = gA + (gU_perp / Sc.unsqueeze(-2)).matmul(V.mH)
    return gA + (U / Sc.unsqueeze(-2)).matmul(gV_perp.mH)


def _svd_jvp(A_t, A, U, S, Vh, full_matrices):
    # (the rule's parameters are named by the op's outputs: U and Vh as returned)
    U_full, Vh_full = U, Vh
    U, V = _svd_reduced(A, U, Vh, full_matrices)
    Sc = S.to(U.dtype)
    P = U.mH.matmul(A_t).matmul(V)
    F = _gap_inverse(S, True)
    row, col = Sc.unsqueeze(-1), Sc.unsqueeze(-2)
    OU = F * (P * col + row * P.mH)
    OV = F * (row * P + P.mH * col)
    if U.is_complex():
        OU = OU + diag_embed(P.diagonal(0, -2, -1).imag / S * 1j)
    AV, AhU = A_t.matmul(V), A_t.mH.matmul(U)
    dU = U.matmul(OU) + (AV - U.matmul(U.mH.matmul(AV))) / col
    dV = V.matmul(OV) + (AhU - V.matmul(V.mH.matmul(AhU))) / col
    return (_padded(dU, -1, U_full), P.diagonal(0, -2, -1).real,
            _padded(dV.mH, -2, Vh_full))


defop("linalg_svd", _svd, inputs=("A",), outputs=("U", "S", "Vh"),
      vjp={"A": _svd_vjp}, jvp=_svd_jvp, batch=matrices, **L)


# ----- svdvals and eigvalsh: the values only. U, V (eigenvectors) are outputs that
# take no gradient, so their zero cotangents never meet F's 1/0 at repeated or zero
# values (the values stay differentiable there; torch's rules, as its gU, gV undefined).
# The vjp takes U, V from the full decomposition of A again, so that a double backward
# differentiates them (as torch's does, through svd's and eigh's own rules)
def _values_vjp(grad, left, right):
    return left.matmul(diag_embed(grad.to(left.dtype))).matmul(right)


def _svdvals_vjp(grad, A):
    U, _, Vh = call(OPS["linalg_svd"], A, False)
    return _values_vjp(grad, U, Vh)


def _eigvalsh_vjp(grad, A, UPLO):
    _, V = call(OPS["linalg_eigh"], A, UPLO)
    return _values_vjp(grad, V, V.mH)


def _svdvals_jvp(A_t, U, Vh):
    return U.mH.matmul(A_t).matmul(Vh.mH).diagonal(0, -2, -1).real


def _eigvalsh_jvp(A_t, eigenvectors):
    V = eigenvectors
    return V.mH.matmul(A_t).matmul(V).diagonal(0, -2, -1).real


defop("linalg_svdvals", lambda A: _svd(A, False), inputs=("A",), outputs=("U", "S", "Vh"),
      diff_outputs=("S",), vjp={"A": _svdvals_vjp},
      jvp=_svdvals_jvp, batch=matrices, **L)
defop("linalg_eigvalsh", _eigh, inputs=("A",), outputs=("eigenvalues", "eigenvectors"),
      diff_outputs=("eigenvalues",),
      vjp={"A": _eigvalsh_vjp},
      jvp=_eigvalsh_jvp, batch=matrices, **L)


# ----- the public functions -------------------------------------------------------
def qr(A, mode="reduced"):
    """The QR decomposition ``A = Q R`` (named tuple ``(Q, R)``)."""
    return QRResult(*call(OPS["linalg_qr"], A, mode))


def eigh(A, UPLO="L"):
    """Eigenvalues (ascending, real) and eigenvectors of a Hermitian ``A``."""
    return EighResult(*call(OPS["linalg_eigh"], A, UPLO))


def svd(A, full_matrices=True):
    """The singular value decomposition ``A = U diag(S) Vh`` (named tuple)."""
    return SVDResult(*call(OPS["linalg_svd"], A, full_matrices))


def svdvals(A):
    """The singular values of ``A``, in descending order."""
    return call(OPS["linalg_svdvals"], A)[1]


def eigvalsh(A, UPLO="L"):
    """The eigenvalues of a Hermitian ``A``, ascending."""
    return call(OPS["linalg_eigvalsh"], A, UPLO)[0]
