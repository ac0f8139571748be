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

__all__ = ["Engine", "engine_for", "foreign_engine", "foreign_fix", "is_tensor"]


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


#: the top-level packages of each engine's code
_PACKAGES = {"torch": "torch", "jax": "jax", "jaxlib": "jax"}
#: how each engine's functions refuse a tensor not their own where the traceback
#: may hold no frame of theirs (torch's built-ins; JAX hides its own frames):
#: "zeros_like(): argument 'input' (position 1) must be Tensor, not Tensor" (a
#: refengine Tensor), torch.stack's "expected Tensor as element 0 in argument 0,
#: but got Tensor", a torch.Tensor method's "descriptor 'sin' for
#: 'torch._C.TensorBase' objects doesn't apply", jnp.sin's "Error interpreting
#: argument to <function sin> as an abstract array"
_REFUSALS = {"torch": ("must be Tensor, not", "expected Tensor as element",
                       "torch._C.TensorBase"),
             "jax": ("as an abstract array", "is not a valid JAX type")}


def foreign_engine(exc: BaseException, engine: str) -> str | None:
    """The engine, "torch" or "jax", whose functions raised ``exc`` (or what
    caused it), a ``TypeError``, when the code under check gave them tensors
    of ``engine`` ("refengine", "torch", "jax"): the code is written for that
    engine. Told by a frame of its package in the traceback, or by torch's
    words for a built-in function given a tensor not its own; ``None`` when
    neither shows one engine other than ``engine``."""
    while exc is not None and not isinstance(exc, TypeError):
        exc = exc.__cause__
    if exc is None:
        return None
    found, frame = set(), exc.__traceback__
    while frame is not None:
        package = str(frame.tb_frame.f_globals.get("__name__", "")).partition(".")[0]
        found.add(_PACKAGES.get(package))
        frame = frame.tb_next
    found |= {name for name, refusals in _REFUSALS.items()
              if any(words in str(exc) for words in refusals)}
    others = found - {None, engine}
    return others.pop() if len(others) == 1 else None


def foreign_fix(exc: BaseException, engine: str) -> str | None:
    """What to do when the function under check raised ``exc`` on ``engine``'s
    tensors because it is another engine's code (``foreign_engine``), else ``None``."""
    other = foreign_engine(exc, engine)
    if other is None:
        return None
    return (f"it looks like {other} code ({other}'s functions refuse the {engine} tensors it "
            f"was given): check it on {other} tensors (adcheck check: --engine {other})")
