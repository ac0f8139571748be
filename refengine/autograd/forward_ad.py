"""Forward-mode AD: dual levels, ``make_dual`` / ``unpack_dual``.

Levels nest (PyTorch refuses nesting; the design note asks for it). The
tangents themselves, and how ops push them, live in ``tangents``.

>>> with dual_level():
...     x = make_dual(primal, tangent)
...     value, jvp = unpack_dual(x.sin())
"""
from __future__ import annotations

from collections import namedtuple

from ..ops.dispatch import call
from ..ops.registry import OPS
from ..tensor import Tensor
from .tangents import (_levels, enter_dual_level, exit_dual_level, excluding, get_tangent,
                       set_tangent)
# what custom Functions read from this module (autograd/_function_apply.py)
from .tangents import _excluded, active_levels, fit_tangent  # noqa: F401

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])


class dual_level:
    """Context manager for a dual level: ``with dual_level(): ...``."""

    def __enter__(self) -> int:
        self.level = enter_dual_level()
        return self.level

    def __exit__(self, *exc) -> None:
        exit_dual_level(level=self.level)


def _resolve(level: int | None, *, required: bool) -> int | None:
    if level is None:
        if not _levels:
            if required:
                raise RuntimeError("To create a dual tensor, enter a dual level first: "
                                   "use `with forward_ad.dual_level():`")
            return None
        return _levels[-1]
    if level not in _levels:
        if required:
            raise RuntimeError(f"Forward AD level {level} is not active; active levels: {_levels}")
        return None
    return level


def make_dual(tensor, tangent, *, level: int | None = None):
    """A view of ``tensor`` carrying ``tangent`` at ``level`` (default: innermost)."""
    level = _resolve(level, required=True)
    if not isinstance(tangent, Tensor) or not isinstance(tensor, Tensor):
        raise TypeError("make_dual expects two Tensors (primal, tangent)")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(f"Trying to set a forward gradient that has a different size than "
                           f"that of the original Tensor, this is not supported. Tensor is of "
                           f"size {list(tensor.shape)} while the given forward gradient is of "
                           f"size {list(tangent.shape)}.")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if tangent.dtype is not tensor.dtype:
        raise RuntimeError(f"Expected tangent to have dtype {tensor.dtype}, got {tangent.dtype}")
    if get_tangent(tensor, level) is not None:
        raise RuntimeError("Making a dual Tensor based on a Tensor that already has a forward "
                           f"gradient at the same level {level} is not supported.")
    with excluding(level):
        out = _forward_root(_alias(tensor))
    set_tangent(out, level, tangent)
    return out


def unpack_dual(tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)``; the tangent is None outside the level or without one."""
    level = _resolve(level, required=False)
    if level is None:
        return UnpackedDualTensor(tensor, None)
    tangent = get_tangent(tensor, level)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    with excluding(level):
        primal = _forward_root(_alias(tensor))
    primal._fw_grads = {k: v for k, v in tensor._fw_grads.items() if k != level}
    return UnpackedDualTensor(primal, tangent)


def _alias(tensor):
    return call(OPS["alias"], tensor)


def _forward_root(t):
    """A backward view that starts its own forward-mode history."""
    t._fw_base = t._fw_view_fn = None
    return t


