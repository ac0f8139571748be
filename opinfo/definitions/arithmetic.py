"""OpInfos for ``refengine/ops/arithmetic.py``: fmod remainder hypot xlogy lerp polar."""
from __future__ import annotations

import mpmath
import numpy as np

import adcheck.refengine as E

from .. import domains as D
from ..core import FLOATING, FLOATING_AND_COMPLEX, OpInfo, SampleInput
from ..registry import register
from ..samples import binary, make
from .binary import mp_binary

FAMILY = "arithmetic"
_SMALL = D.Domain(-0.9, 0.9, away_from=(0.0,), margin=0.1, name="small_nonzero")
_DIVISOR = D.Domain(1.0, 2.0, name="divisor")


def _mod_samples(opinfo, dtype):
    # |self / other| < 0.9: the quotient stays away from its jumps
    yield from binary((_SMALL, _DIVISOR), pairs=(((2, 3), (2, 3)), ((2, 3), (3,)),
                                                  ((3,), ())))(opinfo, dtype)
    yield SampleInput(make((4,), values=(5.3, -5.3, 2.2, -0.7)),
                      args=(make((4,), values=(2.0, 2.0, -1.5, 1.1)),), name="larger quotients")
    yield SampleInput(make((3,), values=(5.3, -5.3, 2.2)), args=(1.5,), name="number divisor")


def _mp_mod(floor):
    def fn(x, y):
        q = x / y
        return x - (mpmath.floor(q) if floor else mpmath.mpf(int(q))) * y
    return mp_binary(fn)


def _jump_special(opinfo, dtype):
    yield SampleInput(make((2,), values=(4.0, -3.0)), args=(make((2,), values=(2.0, 1.5)),),
                      name="at a jump", rule="the quotient is piecewise constant: its derivative "
                                             "is taken as 0, also at a jump")


register(OpInfo("fmod", E.fmod, family=FAMILY, torch_name="fmod", ref=np.fmod,
                mpmath_ref=_mp_mod(False), dtypes=FLOATING, sample_func=_mod_samples,
                special_func=_jump_special))
register(OpInfo("remainder", E.remainder, family=FAMILY, torch_name="remainder",
                ref=np.remainder, mpmath_ref=_mp_mod(True), dtypes=FLOATING,
                sample_func=_mod_samples, special_func=_jump_special))


register(OpInfo("hypot", E.hypot, family=FAMILY, torch_name="hypot", ref=np.hypot,
                mpmath_ref=mp_binary(mpmath.hypot), dtypes=FLOATING,
                sample_func=binary((D.NONZERO, D.NONZERO))))


def _np_xlogy(x, y):
    with np.errstate(all="ignore"):
        return np.where(x == 0, 0.0, x * np.log(y))


def _xlogy_special(opinfo, dtype):
    yield SampleInput(make((3,), values=(0.0, 0.0, 1.5)), args=(make((3,), values=(0.5, 2.0, 2.0)),),
                      name="self = 0", rule="xlogy(0, y) = 0: d/dself is taken as 0 there")


register(OpInfo("xlogy", E.xlogy, family=FAMILY, torch_name="xlogy", ref=_np_xlogy,
                mpmath_ref=mp_binary(lambda x, y: x * mpmath.log(y) if x != 0 else x * 0),
                dtypes=FLOATING, sample_func=binary((D.REAL, D.POSITIVE)),
                special_func=_xlogy_special))


def _lerp_samples(opinfo, dtype):
    yield SampleInput(make((2, 3)), args=(make((2, 3)), 0.3), name="number weight")
    yield SampleInput(make((2, 3)), args=(make((2, 3)), make((2, 3))), name="tensor weight")
    yield SampleInput(make((2, 3)), args=(make((3,)), make((2, 1))), name="broadcasting")
    yield SampleInput(make(()), args=(make(()), make(())), name="scalars")


register(OpInfo("lerp", E.lerp, family=FAMILY, torch_name="lerp",
                ref=lambda a, b, w: a + w * (b - a),
                mpmath_ref=lambda a, b, w: a + w * (b - a), dtypes=FLOATING_AND_COMPLEX,
                sample_func=_lerp_samples))
register(OpInfo("polar", E.polar, family=FAMILY, torch_name="polar",
                ref=lambda r, t: r * np.exp(1j * t),
                mpmath_ref=mp_binary(lambda r, t: r * mpmath.expj(t)), dtypes=FLOATING,
                sample_func=binary((D.POSITIVE, D.REAL), pairs=(((2, 3), (2, 3)), ((2, 3), (3,)),
                                                                ((), ())))))
