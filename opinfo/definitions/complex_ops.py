"""OpInfos for ``refengine/ops/complex_ops.py``: conj conj_physical real imag angle
view_as_real view_as_complex resolve_conj resolve_neg (none is holomorphic)."""
from __future__ import annotations

import mpmath
import numpy as np

import adcheck.refengine as E

from .. import domains as D
from ..core import FLOATING, FLOATING_AND_COMPLEX, OpInfo, SampleInput
from ..entrywise import entrywise
from ..registry import register
from ..samples import make, unary

FAMILY = "complex_ops"
COMPLEX = (E.complex64, E.complex128)


def _mp(fn):
    vec = entrywise(fn)   # (each distinct entry computed once: see opinfo.entrywise)
    return lambda x, *args, **kwargs: vec(x)


def _as_complex_samples(opinfo, dtype):
    for shape in ((2,), (3, 2), (2, 3, 2)):
        yield SampleInput(make(shape), name=f"shape {shape}")


register(OpInfo("conj", E.conj, family=FAMILY, torch_name="conj", ref=np.conj,
                mpmath_ref=_mp(mpmath.conj), dtypes=FLOATING_AND_COMPLEX, sample_func=unary()))
register(OpInfo("conj_physical", E.conj_physical, family=FAMILY, torch_name="conj_physical",
                ref=np.conj, mpmath_ref=_mp(mpmath.conj), dtypes=FLOATING_AND_COMPLEX,
                sample_func=unary()))
register(OpInfo("resolve_conj", E.resolve_conj, family=FAMILY, torch_name="resolve_conj",
                ref=lambda x: x.copy(), dtypes=FLOATING_AND_COMPLEX, sample_func=unary()))
register(OpInfo("resolve_neg", E.resolve_neg, family=FAMILY, torch_name="resolve_neg",
                ref=lambda x: x.copy(), dtypes=FLOATING_AND_COMPLEX, sample_func=unary()))
register(OpInfo("real", E.real, family=FAMILY, torch_name="real", ref=np.real,
                mpmath_ref=_mp(mpmath.re), dtypes=FLOATING_AND_COMPLEX, sample_func=unary()))
register(OpInfo("imag", E.imag, family=FAMILY, torch_name="imag", ref=np.imag,
                mpmath_ref=_mp(mpmath.im), dtypes=COMPLEX, sample_func=unary()))
register(OpInfo("angle", E.angle, family=FAMILY, torch_name="angle", ref=np.angle,
                mpmath_ref=_mp(lambda z: mpmath.arg(z) if z.imag != 0 or z.real < 0 else z * 0),
                dtypes=FLOATING_AND_COMPLEX,
                sample_func=unary(D.Domain(0.2, 2.0, imag=(-2.0, 2.0), name="right half-plane")),
                description="samples stay off the branch cut of arg on the negative reals",
                # on real numbers the derivative is a constant zero with no graph (as torch's)
                supports_gradgrad=COMPLEX, supports_fwgrad_bwgrad=COMPLEX))
register(OpInfo("view_as_real", E.view_as_real, family=FAMILY, torch_name="view_as_real",
                ref=lambda z: np.stack([z.real, z.imag], axis=-1), dtypes=COMPLEX,
                sample_func=unary(shapes=((4,), (2, 3), (0,), ()))))
register(OpInfo("view_as_complex", E.view_as_complex, family=FAMILY,
                torch_name="view_as_complex", ref=lambda x: x[..., 0] + 1j * x[..., 1],
                dtypes=FLOATING, sample_func=_as_complex_samples))
