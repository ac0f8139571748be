"""The registry of OpInfos: ``op_db``, ``get``, ``register``, and discovery of
third-party ops through the ``adcheck.ops`` entry-point group."""
from __future__ import annotations

import difflib
import warnings
from importlib import metadata

from .core import OpInfo

ENTRY_POINT_GROUP = "adcheck.ops"

#: every registered OpInfo, in registration order (updated in place)
op_db: list = []
_by_name: dict = {}


class PluginWarning(UserWarning):
    """A third-party entry point could not be loaded."""


def register(opinfo: OpInfo) -> OpInfo:
    """Add ``opinfo`` to the registry; a second OpInfo with the same name is refused."""
    if not isinstance(opinfo, OpInfo):
        raise TypeError(f"register() expects an OpInfo, got {type(opinfo).__name__}")
    if opinfo.name in _by_name:
        if _by_name[opinfo.name] is opinfo:
            return opinfo
        raise ValueError(f"an OpInfo named {opinfo.name!r} is already registered "
                         f"(family {_by_name[opinfo.name].family!r}); choose another name")
    _by_name[opinfo.name] = opinfo
    op_db.append(opinfo)
    return opinfo


def get(name: str) -> OpInfo:
    """The OpInfo called ``name``; a ``KeyError`` suggests close names."""
    try:
        return _by_name[name]
    except KeyError:
        close = difflib.get_close_matches(name, list(_by_name), n=3)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise KeyError(f"no OpInfo named {name!r}{hint}") from None


_builtin_count = 0


def builtin_ops() -> list:
    """The OpInfos that ship with adcheck (registered before any plugin)."""
    return op_db[:_builtin_count]


def seal_builtin() -> None:
    """Mark everything registered so far as built in (called once definitions load)."""
    global _builtin_count
    _builtin_count = len(op_db)


def names() -> list:
    """The registered names, in registration order."""
    return [o.name for o in op_db]


def families() -> list:
    """The families of the registered ops, each once, in order of appearance."""
    return list(dict.fromkeys(o.family for o in op_db))


def _register_all(obj, source: str) -> int:
    """Register what an entry point gave: an OpInfo, an iterable of them, a
    callable returning either, or a module (which registered on import)."""
    if callable(obj) and not isinstance(obj, OpInfo) and not isinstance(obj, type):
        obj = obj()
    if obj is None or hasattr(obj, "__file__"):
        return 0
    items = [obj] if isinstance(obj, OpInfo) else list(obj)
    for item in items:
        if not isinstance(item, OpInfo):
            raise TypeError(f"{source} gave {type(item).__name__}, expected OpInfo")
        register(item)
    return len(items)


def load_entry_points(strict: bool = False) -> list:
    """Load every ``adcheck.ops`` entry point; returns the names loaded.

    An entry point may name a module (importing it registers OpInfos), an
    OpInfo, an iterable of them, or a callable returning either. A failing
    entry point raises when ``strict``, and otherwise warns (``PluginWarning``).
    """
    loaded = []
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            _register_all(ep.load(), f"entry point {ep.name!r} ({ep.value})")
        except Exception as exc:   # a broken third-party package must not break the registry
            if strict:
                raise ValueError(f"adcheck.ops entry point {ep.name!r} ({ep.value}) failed: "
                                 f"{type(exc).__name__}: {exc}") from exc
            warnings.warn(f"adcheck.ops entry point {ep.name!r} ({ep.value}) was not loaded: "
                          f"{type(exc).__name__}: {exc}", PluginWarning, stacklevel=2)
            continue
        loaded.append(ep.name)
    return loaded
