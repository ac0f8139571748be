"""More binary (and ternary) elementwise ops: fmod remainder hypot xlogy lerp polar.

fmod and remainder are ``self - q * other`` with a piecewise-constant
quotient ``q`` (truncated, floored), so their derivatives are 1 and ``-q``.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..batching.rules import elementwise
from ..autograd.tangents import absent
from .dispatch import call, is_number
from .opdef import OPS, defelementwise, defop

B = dict(promote=("self", "other"), inplace=True)


def _real_binary(fn):
    def forward(self, other):
        if np.iscomplexobj(self) or np.iscomplexobj(other):
            raise RuntimeError(f"{fn.__name__} is not implemented for complex tensors")
        return fn(self, other)
    forward.__name__ = fn.__name__
    return forward


def _one(self):
    return self * 0 + 1


def _scalar_other(stem: str):
    """PyTorch's node names: ``<stem>Backward0`` for a number ``other``, else ``1``."""
    return lambda raw: f"{stem}Backward0" if is_number(raw["other"]) else f"{stem}Backward1"


defelementwise("fmod", _real_binary(np.fmod),
               {"self": _one, "other": lambda self, other: -(self / other).trunc()},
               variant=_scalar_other("Fmod"), scalar_inputs=("other",), **B)
defelementwise("remainder", _real_binary(np.remainder),
               {"self": _one, "other": lambda self, other: -(self / other).floor()},
               variant=_scalar_other("Remainder"), scalar_inputs=("other",), **B)
defelementwise("hypot", _real_binary(np.hypot),
               {"self": lambda self, result: self / result,
                "other": lambda other, result: other / result}, to_float=True, **B)


def _xlogy(self, other):
    with np.errstate(all="ignore"):
        out = self * np.log(other)
    return np.where((self == 0) & ~np.isnan(other), 0, out).astype(out.dtype)


def _xlogy_self(grad, self, other):
    # PyTorch's derivatives.yaml: xlogy(grad, other), so a zero gradient gives 0
    # even where log(other) is NaN or inf; and 0 where self == 0 and other <= 0
    return call(OPS["xlogy"], grad, other).masked_fill((self == 0) & (other <= 0), 0)


def _xlogy_jvp(self_t, other_t, self, other):
    # an input without a tangent adds no term (not 0 * self / other, NaN at 0 / 0)
    out = None if absent(self_t) else _xlogy_self(self_t, self, other)
    if not absent(other_t):
        term = other_t * self / other
        out = term if out is None else out + term
    return out


def _xlogy_variant(raw: dict) -> str:
    return ("XlogyBackward1" if is_number(raw["self"]) else
            "XlogyBackward2" if is_number(raw["other"]) else "XlogyBackward0")


defop("xlogy", _real_binary(_xlogy),
      vjp={"self": _xlogy_self, "other": lambda grad, self, other: grad * self / other},
      jvp=_xlogy_jvp, inputs=("self", "other"), to_float=True, variant=_xlogy_variant,
      scalar_inputs=("self", "other"), batch=elementwise, **B)
defelementwise("lerp", lambda self, end, weight: self + weight * (end - self),
               {"self": lambda weight: 1 - weight, "end": lambda weight: weight,
                "weight": lambda self, end: end - self},
               promote=("self", "end", "weight"), inplace=True, scalar_inputs=("weight",),
               variant=lambda raw: "LerpBackward0" if is_number(raw["weight"]) else "LerpBackward1")


def _polar(abs, angle):
    if np.iscomplexobj(abs) or np.iscomplexobj(angle):
        raise RuntimeError("polar: expected abs and angle to be floating point tensors")
    out = np.empty(np.broadcast_shapes(abs.shape, angle.shape),
                   dtype=dtypes.to_complex(dtypes.from_numpy_dtype(np.result_type(abs, angle))).np)
    out.real, out.imag = abs * np.cos(angle), abs * np.sin(angle)
    return out


# polar is not holomorphic (its inputs are real): d out = e^{i angle} d abs + i out d angle.
defop("polar", _polar, inputs=("abs", "angle"), promote=("abs", "angle"),
      vjp={"abs": lambda grad, angle: (grad * (angle * -1j).exp()).real,
           "angle": lambda grad, result: (grad * result.conj() * -1j).real},
      jvp=lambda abs_t, angle_t, angle, result: abs_t * (angle * 1j).exp() + angle_t * result * 1j,
      result_dtype=dtypes.to_complex, method=None, batch=elementwise)
