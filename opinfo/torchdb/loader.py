"""Importing PyTorch's ``op_db``, once and only when asked.

``torch.testing._internal.common_methods_invocations`` takes about 15 s to
import and needs ``expecttest`` (a test dependency torch does not install),
so nothing here imports it at module level: ``op_db()`` does it the first
time it is called and keeps the list. ``missing()`` says, without importing
anything heavy, what must be installed first.
"""
from __future__ import annotations

import importlib.util

#: where op_db lives in torch
OP_DB_MODULE = "torch.testing._internal.common_methods_invocations"

#: the packages op_db needs, and how to get them
_REQUIREMENTS = (("torch", "torch"), ("expecttest", "expecttest"))

_cache: dict = {}


class TorchDbUnavailable(ImportError):
    """PyTorch's op_db cannot be imported here; the message says what to install."""


def missing() -> list[str]:
    """The packages op_db needs that are not installed (empty when all are)."""
    return [pip for module, pip in _REQUIREMENTS if importlib.util.find_spec(module) is None]


def available() -> bool:
    """Whether op_db can be imported (torch and expecttest are installed)."""
    return not missing()


def op_db() -> list:
    """PyTorch's list of OpInfos (imported on the first call, then cached).

    Raises ``TorchDbUnavailable`` naming what to install when torch or
    expecttest is missing, or the import error of op_db itself.
    """
    if "op_db" not in _cache:
        absent = missing()
        if absent:
            raise TorchDbUnavailable(
                f"PyTorch's op_db needs {' and '.join(absent)}, which "
                f"{'is' if len(absent) == 1 else 'are'} not installed; install them with "
                f"pip install \"adcheck[torch]\" (or pip install {' '.join(absent)})")
        try:
            module = importlib.import_module(OP_DB_MODULE)
        except ImportError as exc:
            raise TorchDbUnavailable(
                f"importing {OP_DB_MODULE} failed ({type(exc).__name__}: {exc}); this "
                "torch build may not ship its testing package: install the torch wheel "
                "from pytorch.org") from exc
        _cache["op_db"] = list(module.op_db)
    return _cache["op_db"]


def loaded() -> bool:
    """Whether op_db has already been imported in this process."""
    return "op_db" in _cache
