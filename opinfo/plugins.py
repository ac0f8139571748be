"""Load a single plugin file (``adcheck ops --plugin path.py``).

A plugin is a Python file that registers OpInfos when imported, either by
calling ``opinfo.register`` itself or by defining ``OPINFOS`` (an iterable of
OpInfos) or ``opinfos()`` (a function returning one), which are registered
for it.
"""
from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path

from . import registry


def load_plugin(path) -> list:
    """Import the plugin file at ``path``; returns the names of the OpInfos it added.

    The file's folder goes on ``sys.path``, so it can import its neighbours.

    A ``ValueError`` says what is wrong with a missing, unreadable or broken
    file (the original exception is chained).
    """
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"plugin {str(path)!r}: no such file")
    if p.suffix != ".py":
        raise ValueError(f"plugin {str(path)!r}: expected a Python file ending in .py")
    try:
        p.read_bytes()
    except OSError as exc:
        raise ValueError(f"plugin {str(path)!r}: cannot read it ({exc.strerror})") from exc
    resolved = p.resolve()
    # a plugin may import the modules beside it (its own ops, say)
    if str(resolved.parent) not in sys.path:
        sys.path.insert(0, str(resolved.parent))
    tag = hashlib.sha1(str(resolved).encode()).hexdigest()[:10]
    module_name = f"adcheck_plugin_{p.stem}_{tag}"
    if module_name in sys.modules:
        return []
    before = set(registry.names())
    spec = importlib.util.spec_from_file_location(module_name, resolved)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
        for attr in ("OPINFOS", "opinfos"):
            if hasattr(module, attr):
                registry._register_all(getattr(module, attr), f"plugin {str(path)!r}")
    except Exception as exc:
        sys.modules.pop(module_name, None)
        raise ValueError(f"plugin {str(path)!r} failed to load: "
                         f"{type(exc).__name__}: {exc}") from exc
    return [n for n in registry.names() if n not in before]
