"""OpInfos for ``refengine.linalg`` (``refengine/ops/linalg.py``,
``linalg_decompositions.py``, ``norms.py``) and ``torch.norm``.

The matrices are constructed so that the derivatives exist: well
conditioned for det/inv/solve, positive definite for cholesky, distinct
eigenvalues for eigh, full rank with distinct singular values for svd,
pinv and the spectral norms. cholesky and eigh read a Hermitian input, so
their op symmetrises it first (finite differences then move along
Hermitian directions only); eigenvectors and singular vectors are defined
up to a phase, so ``output_process_fn_grad`` keeps gauge-invariant
quantities (``|V|^2``, ``U diag(w) Vh``).
"""
from __future__ import annotations

import math

import mpmath
import numpy as np

import adcheck.refengine as E

from .. import domains as D
from ..core import FLOATING_AND_COMPLEX, KnownFailure, OpInfo, SampleInput
from ..registry import register
from ..samples import (
    distinct_eigenvalues,
    full_rank,
    make,
    matrix,
    spd,
    well_conditioned,
)

FAMILY = "linalg"
FC = FLOATING_AND_COMPLEX
_HERMITIAN = ("the op symmetrises its input ((A + A^H)/2) so that finite differences stay "
              "Hermitian (the decomposition reads one triangle only); torch_fn does the same")


def _torch_on_hermitian(name):
    """torch.linalg.<name> applied to (A + A^H)/2, like the refengine op."""
    def fn(A, *args, **kwargs):
        import torch
        return getattr(torch.linalg, name)((A + A.mH) * 0.5, *args, **kwargs)
    return fn


def _batched(fn):
    """An mpmath reference applying ``fn`` (object matrix -> object array) per matrix."""
    def ref(a, *args, **kwargs):
        lead = a.shape[:-2]
        outs = [np.asarray(fn(a[i], *args, **kwargs), dtype=object) for i in np.ndindex(lead)]
        out = np.empty(lead + outs[0].shape, dtype=object)
        for i, o in zip(np.ndindex(lead), outs):
            if o.ndim:
                out[i] = o
            else:
                out[i] = o.item()
        return out
    return ref


def _mp_matrix(a):
    return mpmath.matrix([list(row) for row in a])


def _to_object(m, shape):
    out = np.empty(shape, dtype=object)
    for i in np.ndindex(shape):
        out[i] = m[i] if len(shape) == 2 else m[i[0]]
    return out


def _mp_inv(a):
    return _to_object(_mp_matrix(a) ** -1, a.shape)


def _mp_solve(a, b):
    x = _mp_matrix(a) ** -1 * _mp_matrix(b)
    return _to_object(x, b.shape)


def _square_samples(spec, batches=((), (2,)), one=True):
    def sample_func(opinfo, dtype):
        for batch in batches:
            yield SampleInput(spec(3, batch), name=f"batch {batch}")
        if one:
            yield SampleInput(spec(1), name="1x1")
        else:
            yield SampleInput(spec(2, (3,)), name="batch of 2x2")
    return sample_func


_TORCH_SINGULAR = ("torch 2.13 returns zeros for the gradient of det at an exactly singular "
                   "matrix (and inaccurate cofactors at a numerically singular one); the "
                   "cofactor matrix is the derivative of the polynomial det (where the "
                   "cofactors are all 0, rank 1 of 3, torch agrees)")
_SINGULAR = (("rank 1 of 2", ((1.0, 2.0), (2.0, 4.0))),
             ("rank 2 of 3", ((1.0, 2.0, 3.0), (4.0, 5.0, 6.0), (7.0, 8.0, 9.0))),
             ("rank 1 of 3", ((1.0, 2.0, 3.0), (2.0, 4.0, 6.0), (-1.0, -2.0, -3.0))))


def _det_singular(opinfo, dtype):
    for name, values in _SINGULAR:
        n = len(values)
        yield SampleInput(make((n, n), values=values), name=name,
                          rule="det is a polynomial: its gradient is the cofactor matrix "
                               "(conjugated for complex input), singular matrices included")


register(OpInfo("linalg.det", E.linalg.det, family=FAMILY, torch_name="linalg.det",
                ref=np.linalg.det, mpmath_ref=_batched(lambda a: mpmath.det(_mp_matrix(a))),
                dtypes=FC, sample_func=_square_samples(well_conditioned, one=False),
                special_func=_det_singular,
                known_failures=tuple(
                    KnownFailure(check, _TORCH_SINGULAR, samples=names, dtypes=dts)
                    for check in ("torch_reverse", "torch_forward")
                    for names, dts in ((("rank 1 of 2", "rank 2 of 3"), (E.float32, E.float64)),
                                       (("rank 1 of 2",), (E.complex64, E.complex128))))))
register(OpInfo("linalg.slogdet", E.linalg.slogdet, family=FAMILY, torch_name="linalg.slogdet",
                ref=lambda a: tuple(np.linalg.slogdet(a)), dtypes=FC,
                sample_func=_square_samples(well_conditioned)))
register(OpInfo("linalg.inv", E.linalg.inv, family=FAMILY, torch_name="linalg.inv",
                ref=np.linalg.inv, mpmath_ref=_batched(_mp_inv), dtypes=FC,
                sample_func=_square_samples(well_conditioned)))


def _solve_samples(opinfo, dtype):
    yield SampleInput(well_conditioned(3), args=(matrix(3, 2),), name="matrix rhs")
    yield SampleInput(well_conditioned(3), args=(make((3,)),), name="vector rhs")
    yield SampleInput(well_conditioned(3, (2,)), args=(matrix(3, 2),), name="broadcast batch")
    yield SampleInput(well_conditioned(3), args=(matrix(2, 3),), kwargs={"left": False},
                      name="left=False")


register(OpInfo("linalg.solve", E.linalg.solve, family=FAMILY, torch_name="linalg.solve",
                ref=lambda a, b, left=True: np.linalg.solve(a, b) if left else
                np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)
                if b.ndim > 1 else np.linalg.solve(a, b),
                dtypes=FC, sample_func=_solve_samples))


def _herm(a):
    return (a + a.mH) * 0.5


def _cholesky(A, upper=False):
    return E.linalg.cholesky(_herm(A), upper=upper)


def _cholesky_samples(opinfo, dtype):
    yield SampleInput(spd(3), name="3x3")
    yield SampleInput(spd(2, (2,)), name="batch of 2x2")
    yield SampleInput(spd(3), kwargs={"upper": True}, name="upper")


register(OpInfo("linalg.cholesky", _cholesky, family=FAMILY, torch_name="linalg.cholesky",
                ref=lambda a, upper=False: np.linalg.cholesky(a) if not upper else
                np.conj(np.swapaxes(np.linalg.cholesky(a), -1, -2)),
                torch_fn=_torch_on_hermitian("cholesky"), dtypes=FC,
                sample_func=_cholesky_samples, description=_HERMITIAN))


def _qr_samples(opinfo, dtype):
    for m, n in ((4, 3), (3, 3), (3, 5)):
        yield SampleInput(full_rank(m, n), name=f"{m}x{n}")
    yield SampleInput(full_rank(3, 3, (2,)), kwargs={"mode": "complete"}, name="complete, square")


register(OpInfo("linalg.qr", E.linalg.qr, family=FAMILY, torch_name="linalg.qr",
                ref=lambda a, mode="reduced": tuple(np.linalg.qr(a, mode=mode)),
                dtypes=FC, sample_func=_qr_samples))


def _eigh(A, UPLO="L"):
    return E.linalg.eigh(_herm(A), UPLO)


def _eigh_gauge(result):
    """Eigenvalues and |V|^2: what does not depend on the eigenvectors' phases."""
    return result[0], result[1] * result[1].conj()


def _eigh_samples(opinfo, dtype):
    yield SampleInput(distinct_eigenvalues(3), output_process_fn_grad=_eigh_gauge, name="3x3")
    yield SampleInput(distinct_eigenvalues(3, (2,)), output_process_fn_grad=_eigh_gauge,
                      name="batch")
    yield SampleInput(distinct_eigenvalues(4), output_process_fn_grad=lambda r: r[0],
                      name="eigenvalues only")


register(OpInfo("linalg.eigh", _eigh, family=FAMILY, torch_name="linalg.eigh",
                torch_fn=_torch_on_hermitian("eigh"), dtypes=FC, sample_func=_eigh_samples,
                description=_HERMITIAN))


def _svd_gauge(result):
    """S and U diag(1..k) Vh: invariant under the phases of the singular pairs."""
    U, S, Vh = result
    w = (S.detach() * 0 + 1).cumsum(-1).to(U.dtype)     # 1, 2, ..., k (any engine)
    return S, (U * w.unsqueeze(-2)).matmul(Vh)


def _svd_samples(opinfo, dtype):
    for m, n, batch in ((4, 3, ()), (3, 3, ()), (3, 5, ()), (3, 2, (2,))):
        yield SampleInput(full_rank(m, n, batch), kwargs={"full_matrices": False},
                          output_process_fn_grad=_svd_gauge, name=f"{batch}{m}x{n}")


register(OpInfo("linalg.svd", E.linalg.svd, family=FAMILY, torch_name="linalg.svd",
                dtypes=FC, sample_func=_svd_samples))


def _full_rank_samples(opinfo, dtype):
    for m, n, batch in ((4, 3, ()), (3, 3, ()), (2, 4, (2,))):
        yield SampleInput(full_rank(m, n, batch), name=f"{batch}{m}x{n}")


register(OpInfo("linalg.svdvals", E.linalg.svdvals, family=FAMILY, torch_name="linalg.svdvals",
                ref=lambda a: np.linalg.svd(a, compute_uv=False), dtypes=FC,
                sample_func=_full_rank_samples))
register(OpInfo("linalg.pinv", E.linalg.pinv, family=FAMILY, torch_name="linalg.pinv",
                ref=np.linalg.pinv, dtypes=FC, sample_func=_full_rank_samples))


# ----- norms -------------------------------------------------------------------------
_ORDS = (2, 1, math.inf, -math.inf, 0, 3, 1.5)


def _mp_vector_norm(x, ord=2, dim=None, keepdim=False):
    dims = tuple(range(x.ndim)) if dim is None else tuple(
        d % x.ndim for d in ((dim,) if isinstance(dim, int) else dim))
    moved = np.moveaxis(x, dims, tuple(range(x.ndim - len(dims), x.ndim)))
    flat = moved.reshape(moved.shape[:moved.ndim - len(dims)] + (-1,))
    out = np.empty(flat.shape[:-1], dtype=object)
    for i in np.ndindex(out.shape):
        a = [abs(v) for v in flat[i]]
        if ord == math.inf:
            out[i] = max(a)
        elif ord == -math.inf:
            out[i] = min(a)
        elif ord == 0:
            out[i] = mpmath.mpf(sum(1 for v in a if v != 0))
        else:
            out[i] = mpmath.fsum(v ** ord for v in a) ** (mpmath.mpf(1) / ord)
    if keepdim:
        for d in dims:
            out = np.expand_dims(out, d)
    return out


def _vector_norm_samples(opinfo, dtype):
    for ord in _ORDS:
        yield SampleInput(make((2, 4), D.NONZERO), args=(ord,), kwargs={"dim": -1},
                          name=f"ord={ord} dim=-1")
    yield SampleInput(make((2, 3, 2), D.NONZERO), name="ord=2, all dims")
    yield SampleInput(make((2, 3, 2), D.NONZERO), args=(3,), kwargs={"dim": (0, 2),
                                                                      "keepdim": True},
                      name="ord=3 dims (0, 2) keepdim")


def _norm_at_zero(opinfo, dtype):
    for ord in (2, 1, 3, 1.5):
        yield SampleInput(make((2, 3), values=np.zeros((2, 3))), args=(ord,), kwargs={"dim": 1},
                          name=f"ord={ord} at 0",
                          rule="the gradient of a norm at 0 is 0 (the minimum-norm subgradient)")
    yield SampleInput(make((4,), values=(1.0, -3.0, 3.0, 2.0)), args=(math.inf,),
                      name="inf-norm ties",
                      rule="tied maxima of |x| share the gradient evenly")


register(OpInfo("linalg.vector_norm", E.linalg.vector_norm, family=FAMILY,
                torch_name="linalg.vector_norm", mpmath_ref=_mp_vector_norm, dtypes=FC,
                sample_func=_vector_norm_samples, special_func=_norm_at_zero))


def _matrix_norm_samples(opinfo, dtype):
    for ord in ("fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf):
        yield SampleInput(full_rank(3, 4, (2,)), args=(ord,), name=f"ord={ord}")
    yield SampleInput(full_rank(3, 4), args=("nuc",), kwargs={"keepdim": True},
                      name="nuc keepdim")


register(OpInfo("linalg.matrix_norm", E.linalg.matrix_norm, family=FAMILY,
                torch_name="linalg.matrix_norm", dtypes=FC, sample_func=_matrix_norm_samples))


def _linalg_norm_samples(opinfo, dtype):
    yield SampleInput(make((2, 3, 2), D.NONZERO), name="default: 2-norm of all entries")
    yield SampleInput(full_rank(3, 4), args=(2,), name="ord=2 of a matrix (spectral)")
    yield SampleInput(make((2, 3, 2), D.NONZERO), args=(3,), kwargs={"dim": 1}, name="ord=3 dim=1")
    yield SampleInput(full_rank(3, 2, (2,)), args=("fro",), kwargs={"dim": (1, 2)}, name="fro dims")


register(OpInfo("linalg.norm", E.linalg.norm, family=FAMILY, torch_name="linalg.norm",
                dtypes=FC, sample_func=_linalg_norm_samples))


def _torch_norm_samples(opinfo, dtype):
    yield SampleInput(make((2, 3), D.NONZERO), name="fro")
    yield SampleInput(make((2, 3), D.NONZERO), args=(1,), kwargs={"dim": 1, "keepdim": True},
                      name="p=1 dim=1 keepdim")
    yield SampleInput(make((2, 3), D.NONZERO), args=(math.inf,), kwargs={"dim": 0},
                      name="p=inf dim=0")
    yield SampleInput(full_rank(3, 3), args=("nuc",), name="nuc")


def _torch_norm_zero(opinfo, dtype):
    yield SampleInput(make((3,), values=(0.0, 0.0, 0.0)), name="fro at 0",
                      rule="norm'(0) = 0 for p=2 (PyTorch masks the 0/0)")


register(OpInfo("norm", E.norm, family=FAMILY, torch_name="norm", dtypes=FC,
                sample_func=_torch_norm_samples, special_func=_torch_norm_zero))
