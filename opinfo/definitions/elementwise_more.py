"""OpInfos for the elementwise ops added to ``refengine/ops/elementwise.py`` after
the first family file: square asinh acosh atanh floor ceil trunc round frac
nan_to_num clamp clip (to merge into ``elementwise.py``)."""
from __future__ import annotations

import mpmath
import numpy as np

import adcheck.refengine as E

from .. import domains as D
from ..core import FLOATING, FLOATING_AND_COMPLEX, OpInfo, SampleInput
from ..registry import register
from ..samples import make, unary
from .elementwise import mp_elementwise

FAMILY = "elementwise"
_INTS = tuple(float(k) for k in range(-3, 4))
#: away from the jumps of floor, ceil, trunc and frac (the integers) ...
OFF_INTEGERS = D.Domain(-3.0, 3.0, away_from=_INTS, margin=0.1, name="off_integers")
#: ... and of round (the half-integers)
OFF_HALVES = D.Domain(-3.0, 3.0, away_from=tuple(k + 0.5 for k in _INTS), margin=0.1,
                      name="off_halves")
ACOSH = D.Domain(1.2, 3.0, imag=(-1.0, 1.0), name="acosh")


def _jumps(values, rule):
    def sample_func(opinfo, dtype):
        yield SampleInput(make((len(values),), values=values), name="at the jumps", rule=rule)
    return sample_func


_TABLE = (
    ("square", D.REAL, np.square, lambda x: x * x, FLOATING_AND_COMPLEX),
    ("asinh", D.REAL, np.arcsinh, mpmath.asinh, FLOATING_AND_COMPLEX),
    ("acosh", ACOSH, np.arccosh, mpmath.acosh, FLOATING_AND_COMPLEX),
    ("atanh", D.OPEN_UNIT, np.arctanh, mpmath.atanh, FLOATING_AND_COMPLEX),
)
for _name, _domain, _ref, _mp, _dtypes in _TABLE:
    register(OpInfo(_name, getattr(E, _name), family=FAMILY, torch_name=_name, ref=_ref,
                    mpmath_ref=mp_elementwise(_mp), dtypes=_dtypes, sample_func=unary(_domain)))

_ZERO = "piecewise constant: the derivative is 0 everywhere, at the jumps included"
# the derivative is a constant zero with no graph (as torch's): no second derivative
# to check, so no second-order mode is claimed
_NO_SECOND = {"supports_gradgrad": False, "supports_fwgrad_bwgrad": False}
for _name, _ref, _mp, _domain in (("floor", np.floor, mpmath.floor, OFF_INTEGERS),
                                  ("ceil", np.ceil, mpmath.ceil, OFF_INTEGERS),
                                  ("trunc", np.trunc, lambda x: mpmath.mpf(int(x)), OFF_INTEGERS),
                                  ("round", np.round, mpmath.nint, OFF_HALVES)):
    register(OpInfo(_name, getattr(E, _name), family=FAMILY, torch_name=_name, ref=_ref,
                    mpmath_ref=mp_elementwise(_mp), dtypes=FLOATING, sample_func=unary(_domain),
                    special_func=_jumps((-1.0, 0.0, 0.5, 2.5), _ZERO), **_NO_SECOND))
def _round_decimals_samples(opinfo, dtype):
    for shape in ((), (4,), (2, 3)):   # values 0.02 above a multiple of 0.1: 0.03 from a jump
        yield SampleInput(make(shape, transform=lambda a: np.round(a, 1) + 0.02),
                          kwargs={"decimals": 1}, name=f"shape {shape}")


register(OpInfo("round_decimals", E.round, family=FAMILY, torch_name="round",
                ref=lambda x, decimals=0: np.round(x, decimals), dtypes=FLOATING,
                sample_func=_round_decimals_samples, description="round(x, decimals=1)",
                **_NO_SECOND))
register(OpInfo("frac", E.frac, family=FAMILY, torch_name="frac", ref=lambda x: x - np.trunc(x),
                mpmath_ref=mp_elementwise(lambda x: x - mpmath.mpf(int(x))), dtypes=FLOATING,
                sample_func=unary(OFF_INTEGERS),
                special_func=_jumps((-1.0, 0.0, 2.0), "frac has slope 1, at the jumps too")))


def _nan_to_num_special(opinfo, dtype):
    yield SampleInput(make((4,), values=(np.nan, np.inf, -np.inf, 1.5)),
                      name="nan and infinities", rule="replaced entries get gradient 0")
    yield SampleInput(make((3,), values=(np.nan, np.inf, 0.5)),
                      kwargs={"nan": 1.0, "posinf": 2.0}, name="custom replacements",
                      rule="replaced entries get gradient 0")


register(OpInfo("nan_to_num", E.nan_to_num, family=FAMILY, torch_name="nan_to_num",
                ref=np.nan_to_num, dtypes=FLOATING, sample_func=unary(D.REAL),
                special_func=_nan_to_num_special,
                description="complex input is refused when differentiated, as in PyTorch"))

_AWAY = D.Domain(-2.0, 2.0, away_from=(-0.5, 0.7), margin=0.1, name="off_bounds")


def _clamp_samples(opinfo, dtype):
    yield SampleInput(make((2, 3), _AWAY), args=(-0.5, 0.7), name="number bounds")
    yield SampleInput(make((2, 3), _AWAY), kwargs={"min": -0.5}, name="min only")
    yield SampleInput(make((2, 3), _AWAY), kwargs={"max": 0.7}, name="max only")
    yield SampleInput(make((2, 3), values=((-1.0, 0.0, 0.3), (0.9, -0.2, 2.0))),
                      args=(make((2, 3), values=((-0.5,) * 3, (-0.5,) * 3)),
                            make((3,), values=(0.5, 0.6, 0.7))), name="tensor bounds")


def _clamp_special(opinfo, dtype):
    yield SampleInput(make((5,), values=(-1.0, 0.0, 0.5, 1.0, 2.0)), args=(0.0, 1.0),
                      name="at the bounds", rule="at a bound the gradient passes to self "
                                                 "(PyTorch: min <= x <= max)")
    yield SampleInput(make((3,), values=(-1.0, 0.5, 2.0)),
                      args=(make((3,), values=(1.0, 1.0, 1.0)), make((3,), values=(0.0,) * 3)),
                      name="min > max", rule="where min > max the output is max: its gradient "
                                             "goes to max")


def _np_clamp(x, min=None, max=None):
    out = x if min is None else np.maximum(x, min)
    return out if max is None else np.minimum(out, max)


for _name in ("clamp", "clip"):
    register(OpInfo(_name, getattr(E, _name), family=FAMILY, torch_name=_name, ref=_np_clamp,
                    dtypes=FLOATING, sample_func=_clamp_samples, special_func=_clamp_special))
