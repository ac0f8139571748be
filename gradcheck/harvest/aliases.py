"""``F.apply`` taken before recording began, rebound while it runs.

``Recorder`` patches each engine's ``Function.apply``. A bound ``F.apply``
taken before that, ``my_op = MyFunction.apply`` at a module's top or
``self.fn = MyFunction.apply`` in a model's ``__init__`` (the usual idioms:
pysdtw's SoftDTW keeps its Function so), still calls the original, and its
applications went unrecorded: a model using only such aliases "applied no
custom Function", and one using some had those left unchecked. While
recording, every such alias in a loaded module's globals, in the attributes
of the model's submodules or in their classes is replaced by ``F.apply`` as
it then is (the patched one), and put back afterwards. An alias held where
no name reaches it (a closure's cell, a list) is not found.
"""
from __future__ import annotations

import sys
import types


def rebind(originals: tuple, own, model=None) -> list:
    """Replace each bound ``F.apply`` whose function is one of ``originals``
    (the unpatched ``apply`` functions) and whose ``F`` is ``own(F)``; returns
    ``[(namespace dict or object, name, alias)]`` for ``restore``."""
    if not originals:
        return []
    replaced = []
    for holder in _holders(model):
        names = holder if isinstance(holder, dict) else vars(holder)
        for name, value in list(names.items()):
            if type(value) is types.MethodType and value.__func__ in originals \
                    and isinstance(value.__self__, type) and own(value.__self__):
                _set(holder, name, value.__self__.apply)
                replaced.append((holder, name, value))
    return replaced


def restore(replaced: list) -> None:
    """Put back what ``rebind`` replaced."""
    for holder, name, value in reversed(replaced):
        _set(holder, name, value)


def _set(holder, name: str, value) -> None:
    if isinstance(holder, dict):
        holder[name] = value
    else:
        setattr(holder, name, value)


def _holders(model) -> list:
    """Where an alias may be held by name: every loaded module's globals, and the
    model's submodules (their instance attributes) and their classes."""
    found = [m.__dict__ for m in list(sys.modules.values())
             if isinstance(m, types.ModuleType) and not _skipped(m.__name__)]
    named = getattr(model, "named_modules", None)
    for _, module in (named() if callable(named) else ()):
        found.append(module)
        found += [c for c in type(module).__mro__ if not _skipped(c.__module__)]
    return found


#: packages that hold no user's Function (torch's and the engines' own; a scan of
#: their globals would only cost time)
_SKIPPED = ("builtins", "torch", "numpy", "jax", "jaxlib", "adcheck", "functorch")


def _skipped(module: str) -> bool:
    return module.split(".", 1)[0] in _SKIPPED
