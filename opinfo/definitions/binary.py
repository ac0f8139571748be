"""OpInfos for ``refengine/ops/binary.py``: binary elementwise ops with
broadcasting, ``where``/``masked_fill``, and the (non-differentiable)
comparisons and logical ops."""
from __future__ import annotations

import importlib

import mpmath
import numpy as np

import adcheck.refengine as E

from .. import domains as D
from ..core import FLOATING, FLOATING_AND_COMPLEX, OpInfo, SampleInput
from ..entrywise import entrywise
from ..registry import register
from ..samples import binary, index, make, mask

FAMILY = "binary"


def mp_binary(fn):
    """An mpmath reference applying ``fn`` entrywise with broadcasting."""
    vec = entrywise(fn)   # (each distinct entry computed once: see opinfo.entrywise)
    return lambda x, y, *args, **kwargs: vec(x, y, **kwargs)


def _arith_samples(domains=(D.REAL, D.REAL), extra=()):
    base = binary(domains)

    def sample_func(opinfo, dtype):
        yield from base(opinfo, dtype)
        yield from extra
    return sample_func


_ALPHA = (SampleInput(make((2, 3)), args=(make((2, 3)),), kwargs={"alpha": 2.5}, name="alpha"),)

register(OpInfo("add", E.add, family=FAMILY, torch_name="add",
                ref=lambda x, y, alpha=1: x + alpha * y, mpmath_ref=mp_binary(lambda x, y, alpha=1: x + alpha * y),
                dtypes=FLOATING_AND_COMPLEX, sample_func=_arith_samples(extra=_ALPHA)))
register(OpInfo("sub", E.sub, family=FAMILY, torch_name="sub",
                ref=lambda x, y, alpha=1: x - alpha * y, mpmath_ref=mp_binary(lambda x, y, alpha=1: x - alpha * y),
                dtypes=FLOATING_AND_COMPLEX, sample_func=_arith_samples(extra=_ALPHA)))
register(OpInfo("rsub", E.rsub, family=FAMILY, torch_name="rsub",
                ref=lambda x, y, alpha=1: y - alpha * x, mpmath_ref=mp_binary(lambda x, y, alpha=1: y - alpha * x),
                dtypes=FLOATING_AND_COMPLEX, sample_func=_arith_samples(extra=_ALPHA)))
register(OpInfo("mul", E.mul, family=FAMILY, torch_name="mul", ref=np.multiply,
                mpmath_ref=mp_binary(lambda x, y: x * y), dtypes=FLOATING_AND_COMPLEX,
                sample_func=_arith_samples(extra=(
                    SampleInput(make((2, 3)), args=(1.5,), name="times a number"),))))
register(OpInfo("div", E.div, family=FAMILY, torch_name="div", ref=np.true_divide,
                mpmath_ref=mp_binary(lambda x, y: x / y), dtypes=FLOATING_AND_COMPLEX,
                sample_func=_arith_samples((D.REAL, D.NONZERO))))
register(OpInfo("atan2", E.atan2, family=FAMILY, torch_name="atan2", ref=np.arctan2,
                mpmath_ref=mp_binary(mpmath.atan2), dtypes=FLOATING,
                sample_func=binary((D.NONZERO, D.Domain(0.2, 2.0, name="positive_x")))))
def _pow_at_zero(opinfo, dtype):
    if dtype.is_complex:
        return   # torch 2.13's complex pow gives nan at 0**0 with a tensor exponent (NumPy 1)
    rule = ("0**0 = 1 has gradient 0 for the base and the exponent (PyTorch masks exponent "
            "== 0 for the base, and base == 0 with exponent >= 0 for the exponent)")
    yield SampleInput(make((3,), values=(0.0, 0.0, 2.0)),
                      args=(make((3,), values=(0.0, 2.0, 0.0)),),
                      name="0**0, tensor exponent", rule=rule)
    yield SampleInput(make((2,), values=(0.0, 1.5)), args=(0,), name="0**0, number exponent",
                      rule=rule)


register(OpInfo("pow", E.pow, family=FAMILY, torch_name="pow", ref=np.power,
                mpmath_ref=mp_binary(mpmath.power), dtypes=FLOATING_AND_COMPLEX,
                special_func=_pow_at_zero,
                sample_func=_arith_samples((D.POSITIVE, D.REAL), extra=(
                    SampleInput(make((2, 3), D.POSITIVE), args=(2.5,), name="number exponent"),
                    SampleInput(make((4,)), args=(2,), name="integer exponent, any base"),
                    SampleInput(make((4,)), args=(0,), name="exponent 0")))))


def _ties(opinfo, dtype):
    a = make((5,), values=(1.0, 2.0, -1.0, 0.5, 3.0))
    b = make((5,), values=(1.0, 0.0, -1.0, 2.0, 3.0))
    yield SampleInput(a, args=(b,), name="ties", rule="where the inputs are equal each gets half")


for _name, _np in (("maximum", np.maximum), ("minimum", np.minimum)):
    register(OpInfo(_name, getattr(E, _name), family=FAMILY, torch_name=_name, ref=_np,
                    mpmath_ref=mp_binary(max if _name == "maximum" else min), dtypes=FLOATING,
                    sample_func=binary(), special_func=_ties))


def _where_samples(opinfo, dtype):
    yield SampleInput(mask((2, 3)), args=(make((2, 3)), make((2, 3))), name="same shapes")
    yield SampleInput(mask((2, 1)), args=(make((3,)), make((2, 3))), name="broadcast")
    yield SampleInput(mask(()), args=(make((2,)), make(())), name="scalar mask")


register(OpInfo("where", E.where, family=FAMILY, torch_name="where",
                ref=lambda c, x, y: np.where(c, x, y), dtypes=FLOATING_AND_COMPLEX,
                sample_func=_where_samples))


def _masked_fill_samples(opinfo, dtype):
    yield SampleInput(make((2, 3)), args=(mask((2, 3)), 0.5), name="number value")
    yield SampleInput(make((2, 3)), args=(mask((3,)), -1.0), name="broadcast mask")
    yield SampleInput(make((2, 3)), args=(mask((2, 3)), make(())), name="tensor value")


register(OpInfo("masked_fill", E.masked_fill, family=FAMILY, torch_name="masked_fill",
                ref=lambda x, m, v: np.where(m, v, x), dtypes=FLOATING_AND_COMPLEX,
                sample_func=_masked_fill_samples))


def _compare_samples(opinfo, dtype):
    yield from binary()(opinfo, dtype)
    same = make((4,), values=(1.0, 2.0, 3.0, -1.0))
    yield SampleInput(same, args=(make((4,), values=(1.0, 0.0, 3.0, 2.0)),), name="with ties")


for _name, _np in (("eq", np.equal), ("ne", np.not_equal), ("lt", np.less),
                   ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal)):
    register(OpInfo(_name, getattr(E, _name), family=FAMILY, torch_name=_name, ref=_np,
                    dtypes=FLOATING_AND_COMPLEX if _name in ("eq", "ne") else FLOATING,
                    sample_func=_compare_samples, supports_autograd=False))


def _logical_samples(opinfo, dtype):
    yield SampleInput(mask((2, 3)), args=(mask((2, 3)),), name="same shapes")
    yield SampleInput(mask((2, 1)), args=(mask((3,)),), name="broadcast")


def _logical_unary(opinfo, dtype):
    yield SampleInput(mask((2, 3)), name="mask")


def _int_samples(opinfo, dtype):
    yield SampleInput(index((2, 3), 16), args=(index((2, 3), 16),), name="ints")
    yield SampleInput(mask((4,)), args=(mask((4,)),), name="bools")


def _int_unary(opinfo, dtype):
    yield SampleInput(index((2, 3), 16), name="ints")
    yield SampleInput(mask((4,)), name="bools")


_LOGIC = (("logical_and", np.logical_and, _logical_samples),
          ("logical_or", np.logical_or, _logical_samples),
          ("logical_not", np.logical_not, _logical_unary),
          ("bitwise_and", np.bitwise_and, _int_samples),
          ("bitwise_or", np.bitwise_or, _int_samples),
          ("bitwise_not", np.invert, _int_unary))
for _name, _np, _samples in _LOGIC:
    register(OpInfo(_name, getattr(E, _name), family=FAMILY, torch_name=_name, ref=_np,
                    dtypes=(E.bool,), sample_func=_samples, supports_autograd=False))


def _nonfinite_samples(opinfo, dtype):
    yield SampleInput(make((5,), values=(1.0, np.nan, np.inf, -np.inf, 0.0)), name="non-finite")
    yield SampleInput(make((2, 3)), name="finite")


for _name, _np in (("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite)):
    register(OpInfo(_name, getattr(E, _name), family=FAMILY, torch_name=_name, ref=_np,
                    dtypes=FLOATING_AND_COMPLEX, sample_func=_nonfinite_samples,
                    supports_autograd=False))


def _whole_tensor_samples(opinfo, dtype):
    yield SampleInput(make((2, 3)), args=(make((2, 3)),), name="different")
    same = make((3,), values=(1.0, 2.0, 3.0))
    yield SampleInput(same, args=(make((3,), values=(1.0, 2.0, 3.0)),), name="equal")
    yield SampleInput(same, args=(make((3,), values=(1.0, 2.0, 3.0 + 1e-9)),), name="close")
    yield SampleInput(same, args=(make((1, 3), values=((1.0, 2.0, 3.0),)),), name="other shape")


# equal and allclose answer with a Python bool about the whole tensors; the
# OpInfo wraps it in a tensor (on torch too) so the value checks can compare it.
def _as_tensor_of(fn, module):
    def call(x, y):
        mod = importlib.import_module(module)
        return mod.tensor(getattr(mod, fn)(x, y))
    call.__name__ = fn
    return call


for _name, _ref in (("equal", lambda x, y: x.shape == y.shape and bool(np.array_equal(x, y))),
                    ("allclose", lambda x, y: bool(np.allclose(x, y)))):
    register(OpInfo(_name, _as_tensor_of(_name, "adcheck.refengine"), family=FAMILY,
                    torch_fn=_as_tensor_of(_name, "torch"),
                    ref=lambda x, y, _ref=_ref: np.asarray(_ref(x, y)),
                    dtypes=FLOATING_AND_COMPLEX, sample_func=_whole_tensor_samples,
                    supports_autograd=False))
