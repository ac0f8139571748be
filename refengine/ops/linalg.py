"""Linear algebra on square matrices (batched over leading dims): det,
slogdet, inv, solve, cholesky, pinv.

The rules are the standard matrix-calculus formulas in the conjugate
Wirtinger convention (PyTorch's derivatives.yaml uses the same ones):
for a holomorphic matrix function the vjp is the adjoint of the jvp under
the real inner product ``<X, Y> = Re tr(X^H Y)``. Each rule is written with
refengine ops, so it differentiates again. The decompositions (qr, eigh,
svd) are in ``linalg_decompositions.py``, the norms in ``norms.py``.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..batching.batched import BatchedTensor, NotBatchable
from ..batching.rules import matrices, pad_to
from .dispatch import call
from .opdef import OPS, defop

L = dict(method=None, function=False)
SlogdetResult = namedtuple("slogdet", ["sign", "logabsdet"])


def _square(name: str, A) -> None:
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.{name}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2] if A.ndim > 1 else A.ndim} by "
                           f"{A.shape[-1] if A.ndim else 0} matrices")
    if A.dtype.kind not in "fc":
        raise RuntimeError(f"linalg.{name}: Expected a floating point or complex tensor as input. "
                           f"Got {A.dtype}")


def _lapack(name: str, fn, *args):
    try:
        return fn(*args)
    except np.linalg.LinAlgError:
        raise RuntimeError(f"linalg.{name}: The diagonal element could not be inverted: the input "
                           "matrix is singular (or not positive-definite).") from None


def trace(X):
    """The trace of each matrix in a batch (a refengine op chain)."""
    return X.diagonal(0, -2, -1).sum(-1)


def diag_embed(v):
    """Batched diagonal matrices with ``v`` on the diagonal (differentiable)."""
    from .. import creation
    n = v.shape[-1]
    return v.unsqueeze(-1) * creation.eye(n, dtype=v.dtype)


def _mat(s):
    """A per-matrix scalar broadcast against matrices."""
    return s.unsqueeze(-1).unsqueeze(-1)


# ----- det: d det = tr(adj(A) dA), so the vjp is grad adj(A)^H (the cofactors,
# conjugated). adj(A) = det(A) A^{-1} where A is well conditioned; otherwise
# (singular A included) adj(A) = c V diag(p) U^H from A = U diag(S) Vh, with
# c = det(U) det(Vh) and p_i the product of the other singular values.
def _det(A):
    _square("det", A)
    return np.linalg.det(A)


def _ill_conditioned(A) -> bool:
    if isinstance(A, BatchedTensor):
        # under vmap each example would need its own branch; the SVD formula
        # holds for every A, so the batch takes it
        return True
    with np.errstate(all="ignore"):
        return A.shape[-1] > 0 and bool(np.any(~(np.linalg.cond(A._data) < 1e8)))


def _others_product(S):
    from .. import creation
    n = S.shape[-1]
    eye = creation.tensor(np.eye(n, dtype=bool))
    return S.unsqueeze(-2).expand(tuple(S.shape[:-1]) + (n, n)).masked_fill(eye, 1).prod(-1)


def _adjugate_svd(A):
    """(c, U, p, Vh) with adj(A) = c Vh^H diag(p) U^H: valid for every A."""
    from .linalg_decompositions import svd
    U, S, Vh = svd(A, full_matrices=False)
    return det(U) * det(Vh), U, _others_product(S).to(A.dtype), Vh


def _det_vjp(grad, A, result):
    if not _ill_conditioned(A):
        return _mat(grad * result.conj()) * inv(A).mH
    c, U, p, Vh = _adjugate_svd(A)
    return (U * (grad * c.conj()).unsqueeze(-1).unsqueeze(-1) * p.unsqueeze(-2)).matmul(Vh)


def _det_jvp(A_t, A, result):
    if not _ill_conditioned(A):
        return result * trace(solve(A, A_t))
    c, U, p, Vh = _adjugate_svd(A)
    return c * (p * U.mH.matmul(A_t).matmul(Vh.mH).diagonal(0, -2, -1)).sum(-1)


defop("linalg_det", _det, inputs=("A",), vjp={"A": _det_vjp}, jvp=_det_jvp, batch=matrices, **L)


# ----- slogdet: t = tr(A^{-1} dA); d logabsdet = Re t, d sign = i sign Im t ------
def _slogdet(A):
    _square("slogdet", A)
    sign, logabsdet = np.linalg.slogdet(A)
    return sign, logabsdet


def _slogdet_vjp(grads, A, sign):
    g_sign, g_logabs = grads
    c = g_logabs.to(A.dtype)
    if A.is_complex():
        c = c + (g_sign * sign.conj()).imag * 1j
    return _mat(c) * inv(A).mH


def _slogdet_jvp(A_t, A, sign):
    t = trace(solve(A, A_t))
    sign_t = sign * t.imag * 1j if A.is_complex() else sign * 0
    return sign_t, t.real


defop("linalg_slogdet", _slogdet, inputs=("A",), outputs=("sign", "logabsdet"),
      vjp={"A": _slogdet_vjp}, jvp=_slogdet_jvp, batch=matrices, **L)


# ----- inv: d(A^{-1}) = -A^{-1} dA A^{-1} -----------------------------------------
def _inv(A):
    _square("inv", A)
    return _lapack("inv", np.linalg.inv, A)


defop("linalg_inv", _inv, inputs=("A",), node="LinalgInvExBackward0",
      vjp={"A": lambda grad, result: -result.mH.matmul(grad).matmul(result.mH)},
      jvp=lambda A_t, result: -result.matmul(A_t).matmul(result), batch=matrices, **L)


# ----- solve: X = A^{-1} B; gB = A^{-H} grad, gA = -gB X^H ------------------------
def _solve(A, B):
    _square("solve", A)
    return _lapack("solve", np.linalg.solve, A, B)


def _solve_rule(c):
    # A (..., n, n) and B (..., n, k) broadcast their leading dims: the batched
    # ones are padded to one rank. NumPy takes only a 1-d B for a vector; a
    # batched one (2-d physically) would pass for a matrix, so it is solved
    # as one column.
    if c.rank("A") < 2 or c.rank("B") < 1:
        raise NotBatchable("A is not a matrix: the loop raises solve's error")
    A, B = c.env["A"], c.env["B"]
    vector = c.rank("B") == 1 and "B" in c.batched
    if vector:
        B = B.unsqueeze(-1)
    rank = max(c.rank("A"), 2 if vector else c.rank("B"))
    A = pad_to(A, rank) if "A" in c.batched else A
    B = pad_to(B, rank) if "B" in c.batched else B
    out = c.run(A=A, B=B)
    return out.squeeze(-1) if vector else out


defop("linalg_solve", _solve, inputs=("A", "B"), promote=("A", "B"), node="LinalgSolveExBackward0",
      vjp={"A": lambda grad, A, result: -solve(A.mH, grad).matmul(result.mH),
           "B": lambda grad, A: solve(A.mH, grad)},
      jvp=lambda A_t, B_t, A, result: solve(A, B_t - A_t.matmul(result)), batch=_solve_rule, **L)


# ----- cholesky: A = L L^H. With X = L^{-1} dA L^{-H}, dL = L phi(X) where
# phi(X) = tril(X) - diag(X)/2; the vjp is its adjoint.
def _phi(X):
    return X.tril() - 0.5 * diag_embed(X.diagonal(0, -2, -1))


def _cholesky(A, upper=False):
    _square("cholesky", A)
    try:
        low = np.linalg.cholesky(A)
    except np.linalg.LinAlgError:
        raise RuntimeError("linalg.cholesky: The factorization could not be completed because "
                           "the input is not positive-definite.") from None
    return np.conj(np.swapaxes(low, -1, -2)) if upper else low


def _cholesky_vjp(grad, result, upper):
    # L^{-H} M L^{-1} with M = (T + tril(T,-1)^H)/2, T = tril(L^H gL): the adjoint
    # of phi, Hermitian off the diagonal (PyTorch's choice of representative).
    low, g = (result.mH, grad.mH) if upper else (result, grad)
    T = low.mH.matmul(g).tril()
    M = 0.5 * (T + T.tril(-1).mH)
    return solve(low.mH, solve(low.mH, M.mH).mH)


def _cholesky_jvp(A_t, result, upper):
    low = result.mH if upper else result
    Y = solve(low, A_t)                               # L^{-1} dA
    X = solve(low, Y.mH).mH                           # L^{-1} dA L^{-H}
    dL = low.matmul(_phi(X))
    return dL.mH if upper else dL


defop("linalg_cholesky", _cholesky, inputs=("A",), node="LinalgCholeskyExBackward0",
      vjp={"A": _cholesky_vjp}, jvp=_cholesky_jvp, batch=matrices, **L)


# ----- pinv (full rank): dP = -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P
def _pinv(A, atol=None, rtol=None, hermitian=False):
    m, n = A.shape[-2:]
    if atol is None and rtol is None:
        rtol = np.finfo(A.dtype).eps * max(m, n)
    if atol is not None and np.any(atol):
        raise NotImplementedError("linalg.pinv: atol is not supported; use rtol")
    return np.linalg.pinv(A, rcond=rtol, hermitian=hermitian)


def _eye(n, like):
    from .. import creation
    return creation.eye(n, dtype=like.dtype)


def _pinv_vjp(grad, A, result):
    P, G = result, grad
    m, n = A.shape[-2:]
    left = _eye(m, A) - A.matmul(P)
    right = _eye(n, A) - P.matmul(A)
    return (-P.mH.matmul(G).matmul(P.mH) + left.matmul(G.mH).matmul(P).matmul(P.mH)
            + P.mH.matmul(P).matmul(G.mH).matmul(right))


def _pinv_jvp(A_t, A, result):
    P = result
    m, n = A.shape[-2:]
    left = _eye(m, A) - A.matmul(P)
    right = _eye(n, A) - P.matmul(A)
    return (-P.matmul(A_t).matmul(P) + P.matmul(P.mH).matmul(A_t.mH).matmul(left)
            + right.matmul(A_t.mH).matmul(P.mH).matmul(P))


def _pinv_rule(c):
    # atol and rtol (numbers or tensors) broadcast against A's leading dims;
    # batched ones need A batched and size-1 dims to line up with its dims
    if c.rank("A") < 2:
        raise NotBatchable("A is not a matrix: the loop raises pinv's error")
    changes = {n: pad_to(c.env[n], c.rank("A") - 2) for n in ("atol", "rtol") if n in c.batched}
    return c.run(A=c.materialize("A") if changes else c.env["A"], **changes)


# atol and rtol are inputs (not differentiated) so that tensor tolerances may be batched
defop("linalg_pinv", _pinv, inputs=("A", "atol", "rtol"), nondiff=("atol", "rtol"),
      vjp={"A": _pinv_vjp}, jvp=_pinv_jvp, batch=_pinv_rule, **L)


# ----- the public functions (refengine.linalg re-exports them) -------------------
def det(A):
    """The determinant of each square matrix in ``A``."""
    return call(OPS["linalg_det"], A)


def slogdet(A):
    """``(sign, logabsdet)`` of the determinant; ``sign`` is complex for complex ``A``."""
    return SlogdetResult(*call(OPS["linalg_slogdet"], A))


def inv(A):
    """The inverse of each square matrix in ``A`` (raises if singular)."""
    return call(OPS["linalg_inv"], A)


def solve(A, B, *, left=True):
    """The solution ``X`` of ``A X = B`` (``X A = B`` when ``left=False``).

    ``B`` is a batch of vectors when it is 1-D or has the shape ``A.shape[:-1]``.
    """
    if not left:
        return solve(A.mT, B.mT).mT
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    if vector:
        return call(OPS["linalg_solve"], A, B.unsqueeze(-1)).squeeze(-1)
    return call(OPS["linalg_solve"], A, B)


def cholesky(A, *, upper=False):
    """The Cholesky factor ``L`` (``A = L L^H``) of a Hermitian positive-definite ``A``."""
    return call(OPS["linalg_cholesky"], A, upper)


def pinv(A, *, atol=None, rtol=None, hermitian=False):
    """The Moore-Penrose pseudo-inverse (differentiable where ``A`` has full rank)."""
    return call(OPS["linalg_pinv"], A, atol, rtol, hermitian)
