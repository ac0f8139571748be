"""Engine adapters: the only place gradcheck touches an autograd engine.

An adapter converts tensors to and from NumPy, knows which tensors require
grad, computes vector-Jacobian products (``grad``) and Jacobian-vector
products (through dual tensors). gradcheck works with NumPy arrays and calls
these methods; it never imports an engine itself. ``engine_for(inputs)``
picks the adapter from the inputs' tensor type; torch is imported only when
torch tensors are given, jax only when JAX arrays are. The interface is
``gradcheck.engines.base.Engine``; each adapter is a module of its own.
"""
from __future__ import annotations

import sys
from collections.abc import Sequence

from adcheck.gradcheck.engines.base import Engine
from adcheck.gradcheck.errors import UncheckableError

__all__ = ["Engine", "engine_for", "is_tensor"]


def _torch_engine():
    from adcheck.gradcheck.engines.torch import TorchEngine
    return TorchEngine()


def _refengine_engine():
    from adcheck.gradcheck.engines.refengine import RefEngine
    return RefEngine()


def _jax_engine():
    from adcheck.gradcheck.engines.jax import JaxEngine
    return JaxEngine()


def _engine_of(value):
    """The adapter for one value, or ``None`` if it is not a tensor we know."""
    # refengine's first: a plain isinstance, where torch's Tensor answers through a
    # metaclass in Python (no tensor is both)
    refengine = sys.modules.get("adcheck.refengine")
    if refengine is not None and isinstance(value, getattr(refengine, "Tensor", ())):
        return _refengine_engine
    if type(value).__module__.partition(".")[0] in ("jax", "jaxlib"):
        jax = sys.modules.get("jax")
        return _jax_engine if jax is not None and isinstance(value, jax.Array) else None
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return _torch_engine
    return None


def is_tensor(value) -> bool:
    """Whether ``value`` is a tensor of an engine gradcheck knows."""
    return _engine_of(value) is not None


def engine_for(inputs: Sequence) -> Engine:
    """The adapter for the tensors among ``inputs``.

    Raises ``ValueError`` if there is no tensor, or tensors of two engines.
    """
    makers = {_engine_of(value) for value in inputs} - {None}
    if not makers:
        kinds = ", ".join(type(v).__name__ for v in inputs) or "nothing"
        raise UncheckableError(
            f"gradcheck: the inputs contain no refengine or torch tensor or JAX array "
            f"(got {kinds}); "
            "pass the inputs as tensors, e.g. refengine.tensor(x, dtype=refengine.float64, "
            "requires_grad=True)")
    if len(makers) > 1:
        names = sorted(maker.__name__.strip("_").removesuffix("_engine") for maker in makers)
        raise UncheckableError(f"gradcheck: the inputs mix {' and '.join(names)} tensors; "
                               "use tensors of one engine")
    return makers.pop()()
