"""OpInfos for ``refengine.nn.functional`` (``refengine/ops/nn.py``, ``conv.py``):
activations, softmax, losses, linear, convolutions, layer_norm, dropout, pad.

The activations are sampled away from their kinks; the kinks are special
samples with PyTorch's rule. dropout is checked where it is deterministic
(``p=0`` and eval mode: the identity).
"""
from __future__ import annotations

import mpmath
import numpy as np

import adcheck.refengine as E
import adcheck.refengine.nn.functional as F

from .. import domains as D
from ..core import FLOATING, FLOATING_AND_COMPLEX, OpInfo, SampleInput
from ..entrywise import entrywise
from ..registry import register
from ..samples import index, make, unary

FAMILY = "nn"
_SHAPES = ((), (4,), (2, 3), (2, 1, 3))


def _mp_map(fn):
    vec = entrywise(fn)   # (each distinct entry computed once: see opinfo.entrywise)

    def ref(x, *args, **kwargs):
        return vec(x, *args, **kwargs) if x.ndim else np.array(fn(x.item(), *args, **kwargs),
                                                               dtype=object)
    return ref


def _special(values, rule, **kwargs):
    def sample_func(opinfo, dtype):
        yield SampleInput(make((len(values),), values=values), kwargs=kwargs, name="kinks",
                          rule=rule)
    return sample_func


def _activation(name, mp, domain=D.NONZERO, special=None, variants=()):
    def sample_func(opinfo, dtype):
        yield from unary(domain, _SHAPES)(opinfo, dtype)
        for kwargs in variants:
            yield SampleInput(make((2, 3), domain), kwargs=kwargs, name=f"{kwargs}")
    register(OpInfo(f"nn.functional.{name}", getattr(F, name), family=FAMILY,
                    torch_name=f"nn.functional.{name}", mpmath_ref=_mp_map(mp), dtypes=FLOATING,
                    sample_func=sample_func, special_func=special))


def _mp_gelu(x, approximate="none"):
    if approximate == "tanh":
        return x * (1 + mpmath.tanh(mpmath.sqrt(2 / mpmath.pi) * (x + 0.044715 * x ** 3))) / 2
    return x * (1 + mpmath.erf(x / mpmath.sqrt(2))) / 2


def _mp_softplus(x, beta=1.0, threshold=20.0):
    return x if x * beta > threshold else mpmath.log1p(mpmath.exp(x * beta)) / beta


_KINKS = (-1.0, 0.0, 0.0, 2.0)
_activation("relu", lambda x: x if x > 0 else x * 0,
            special=_special(_KINKS, "relu'(0) = 0 (the minimum-norm subgradient)"))
_activation("gelu", _mp_gelu, D.REAL, variants=({"approximate": "tanh"},))
_activation("silu", lambda x: x / (1 + mpmath.exp(-x)), D.REAL)
_activation("softplus", _mp_softplus, D.REAL, variants=({"beta": 2.0, "threshold": 1.0},),
            special=_special((2.5, 3.0), "above the threshold softplus is x (slope 1)",
                             threshold=2.0))
_activation("elu", lambda x, alpha=1.0: x if x > 0 else alpha * mpmath.expm1(x),
            variants=({"alpha": 0.5},),
            special=_special(_KINKS, "elu'(0) = alpha (PyTorch takes the x <= 0 branch)"))
_activation("leaky_relu", lambda x, negative_slope=0.01: x if x > 0 else x * negative_slope,
            variants=({"negative_slope": 0.2},),
            special=_special(_KINKS, "leaky_relu'(0) = negative_slope (the x <= 0 branch)"))
_activation("hardtanh", lambda x, min_val=-1.0, max_val=1.0: min(max(x, min_val), max_val),
            D.Domain(-2.0, 2.0, away_from=(-1.0, 1.0, -0.5, 0.5), margin=0.1, name="hardtanh"),
            variants=({"min_val": -0.5, "max_val": 0.5},),
            special=_special((-1.0, 1.0, 0.0, 1.5),
                             "hardtanh passes no gradient at its bounds (x <= min or x >= max)"))


def _mp_softmax(log: bool):
    def ref(x, dim, dtype=None):
        moved = np.moveaxis(x, dim, -1)
        out = np.empty(moved.shape, dtype=object)
        for i in np.ndindex(moved.shape[:-1]):
            row = list(moved[i])
            lse = mpmath.log(mpmath.fsum(mpmath.exp(v) for v in row))
            out[i] = [v - lse if log else mpmath.exp(v - lse) for v in row]
        return np.moveaxis(out, -1, dim)
    return ref


def _softmax_samples(opinfo, dtype):
    for shape, dim in (((4,), 0), ((2, 3), 1), ((2, 3, 2), 0), ((2, 3, 2), -1)):
        yield SampleInput(make(shape), args=(dim,), name=f"{shape} dim={dim}")


for _name in ("softmax", "log_softmax"):
    for _label, _op in ((_name, getattr(E, _name)), (f"nn.functional.{_name}", getattr(F, _name))):
        register(OpInfo(_label, _op, family=FAMILY, torch_name=_label,
                        mpmath_ref=_mp_softmax(_name != "softmax"), dtypes=FLOATING,
                        sample_func=_softmax_samples))


def _mse_samples(opinfo, dtype):
    for reduction in ("mean", "sum", "none"):
        yield SampleInput(make((2, 3)), args=(make((2, 3)),), kwargs={"reduction": reduction},
                          name=f"reduction={reduction}")
    yield SampleInput(make(()), args=(make(()),), name="scalar")


register(OpInfo("nn.functional.mse_loss", F.mse_loss, family=FAMILY,
                torch_name="nn.functional.mse_loss", dtypes=FLOATING, sample_func=_mse_samples))


def _weight(C):
    return make((C,), D.POSITIVE, requires_grad=False)


def _nll_samples(opinfo, dtype):
    for reduction in ("mean", "sum", "none"):
        yield SampleInput(make((3, 4)), args=(index((3,), 4),), kwargs={"reduction": reduction},
                          name=f"(N, C) reduction={reduction}")
    yield SampleInput(make((3, 4)), args=(index((3,), 4, values=(1, 0, 3)), _weight(4)),
                      kwargs={"ignore_index": 0}, name="weight, ignore_index")
    yield SampleInput(make((4,)), args=(index((), 4, values=2),), name="(C,) input")
    yield SampleInput(make((2, 4, 3)), args=(index((2, 3), 4),), kwargs={"reduction": "sum"},
                      name="(N, C, d)")


register(OpInfo("nn.functional.nll_loss", F.nll_loss, family=FAMILY,
                torch_name="nn.functional.nll_loss", dtypes=FLOATING, sample_func=_nll_samples))


def _ce_samples(opinfo, dtype):
    for reduction in ("mean", "sum", "none"):
        for ls in (0.0, 0.2):
            kw = {"reduction": reduction, "label_smoothing": ls}
            yield SampleInput(make((3, 4)), args=(index((3,), 4),), kwargs=kw,
                              name=f"indices {kw}")
            yield SampleInput(make((3, 4)), args=(make((3, 4), D.POSITIVE),), kwargs=kw,
                              name=f"probabilities {kw}")
    yield SampleInput(make((3, 4)), args=(index((3,), 4, values=(1, 3, 0)), _weight(4)),
                      kwargs={"ignore_index": 3, "label_smoothing": 0.1},
                      name="weight, ignore_index, smoothing")
    yield SampleInput(make((2, 4, 3)), args=(index((2, 3), 4),), name="(N, C, d) indices")


register(OpInfo("nn.functional.cross_entropy", F.cross_entropy, family=FAMILY,
                torch_name="nn.functional.cross_entropy", dtypes=FLOATING,
                sample_func=_ce_samples))


def _linear_samples(opinfo, dtype):
    yield SampleInput(make((2, 3)), args=(make((4, 3)), make((4,))), name="with bias")
    yield SampleInput(make((2, 5, 3)), args=(make((4, 3)),), name="batched, no bias")
    yield SampleInput(make((3,)), args=(make((2, 3)), make((2,))), name="vector input")


register(OpInfo("nn.functional.linear", F.linear, family=FAMILY,
                torch_name="nn.functional.linear", dtypes=FLOATING_AND_COMPLEX,
                sample_func=_linear_samples))

_CONV_OPTIONS = ({}, {"stride": 2}, {"padding": 1}, {"dilation": 2}, {"padding": "same"},
                 {"stride": 2, "padding": 2, "dilation": 2})


def _conv_samples(n):
    def sample_func(opinfo, dtype):
        spatial, kernel = ((6,), (3,)) if n == 1 else ((4, 3), (2, 2))
        for kw in _CONV_OPTIONS:
            yield SampleInput(make((1, 2) + spatial), args=(make((2, 2) + kernel), make((2,))),
                              kwargs=kw, name=f"{kw}")
        yield SampleInput(make((2, 4) + spatial), args=(make((2, 2) + kernel),),
                          kwargs={"groups": 2}, name="batch 2, groups=2, no bias")
    return sample_func


for _n in (1, 2):
    register(OpInfo(f"nn.functional.conv{_n}d", getattr(F, f"conv{_n}d"), family=FAMILY,
                    torch_name=f"nn.functional.conv{_n}d", dtypes=FLOATING_AND_COMPLEX,
                    sample_func=_conv_samples(_n)))


def _layer_norm_samples(opinfo, dtype):
    yield SampleInput(make((3, 4)), args=((4,), make((4,)), make((4,))), name="affine")
    yield SampleInput(make((2, 3, 4)), args=((3, 4), make((3, 4)), make((3, 4))),
                      kwargs={"eps": 1e-3}, name="2 normalized dims")
    yield SampleInput(make((2, 3, 4)), args=((4,),), name="no affine")


register(OpInfo("nn.functional.layer_norm", F.layer_norm, family=FAMILY,
                torch_name="nn.functional.layer_norm", dtypes=FLOATING,
                sample_func=_layer_norm_samples))


def _dropout_samples(opinfo, dtype):
    yield SampleInput(make((2, 3)), args=(0.0,), name="p=0, training: the identity")
    yield SampleInput(make((2, 3)), args=(0.5, False), name="eval mode: the identity")


register(OpInfo("nn.functional.dropout", F.dropout, family=FAMILY,
                torch_name="nn.functional.dropout", dtypes=FLOATING_AND_COMPLEX,
                sample_func=_dropout_samples,
                description="checked where deterministic; random masks are not differentiable "
                            "functions of the input's values alone"))


def _pad_samples(opinfo, dtype):
    yield SampleInput(make((2, 3)), args=((1, 2),), name="constant")
    yield SampleInput(make((2, 3, 4)), args=((1, 0, 2, 1),), kwargs={"value": 3.5},
                      name="constant value, 2 dims")
    yield SampleInput(make((2, 3, 4)), args=((-1, 2, 0, -1),), name="negative (crop)")
    for mode in ("reflect", "replicate", "circular"):
        yield SampleInput(make((1, 2, 4, 3)), args=((2, 1, 1, 2),), kwargs={"mode": mode},
                          name=mode)


register(OpInfo("nn.functional.pad", F.pad, family=FAMILY, torch_name="nn.functional.pad",
                dtypes=FLOATING_AND_COMPLEX, sample_func=_pad_samples))
