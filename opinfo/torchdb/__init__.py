"""PyTorch's operator database (``op_db``) as an adcheck registry.

Each OpInfo of ``torch.testing._internal.common_methods_invocations.op_db``
that supports autograd on CPU becomes a ``TorchOpEntry``: the registry
protocol of ``opinfo.OpInfo`` (name, family, dtypes, supports, samples,
known failures, tolerance) read from the OpInfo, and the checked call built
exactly as PyTorch's own gradient tests build it.

>>> from adcheck.opinfo import torchdb
>>> entry = torchdb.get("linalg.eigh")
>>> sample = entry.sample(0, "float64")          # the same tensors in any process
>>> call = entry.call(sample)                    # call.func(*call.inputs)
>>> from adcheck import gradcheck
>>> gradcheck.check(call.func, call.inputs, **entry.adcheck_options("reverse", "float64"))

Importing this package is cheap; op_db itself (about 15 s, and it needs
``expecttest``: ``pip install "adcheck[torch]"``) is imported by the first
call that needs it, and the entries are built once per process.
"""
from __future__ import annotations

import difflib

from .entry import DTYPE_ORDER, TorchOpEntry, dtype_name, dtype_named, family_of
from .loader import TorchDbUnavailable, available, loaded, missing
from .skips import GRADIENT_TESTS, TorchKnownFailure

#: the registry's name where one is chosen by name (``--registry torch``)
REGISTRY = "torch"

_cache: dict = {}


def _build() -> tuple[list, list]:
    from .loader import op_db
    kept, excluded = [], []
    for op in op_db():
        entry = TorchOpEntry(op)
        if not op.supports_autograd:
            excluded.append((entry.name, "the OpInfo does not support autograd"))
            continue
        if not entry.dtypes:
            excluded.append((entry.name, "no dtype supports backward on CPU"))
            continue
        kept.append(entry)
        if op.get_inplace() is not None and op.supports_inplace_autograd:
            kept.append(TorchOpEntry(op, "inplace"))
    seen: dict = {}
    for entry in kept:
        if entry.name in seen:
            raise RuntimeError(f"two op_db entries are both named {entry.name!r} "
                               f"({seen[entry.name].opinfo.full_name} and "
                               f"{entry.opinfo.full_name}); report this torch version")
        seen[entry.name] = entry
    return kept, excluded


def entries(inplace: bool = False) -> list:
    """Every op_db OpInfo with autograd on CPU, in op_db's order; with ``inplace``,
    each in-place variant torch's tests check follows its op (named ``<op>_``)."""
    if "all" not in _cache:
        _cache["all"], _cache["excluded"] = _build()
    if inplace:
        return _cache["all"]
    if "function" not in _cache:
        _cache["function"] = [e for e in _cache["all"] if e.variant == "function"]
    return _cache["function"]


def excluded() -> list:
    """``[(name, reason)]`` for the OpInfos left out (no autograd on CPU)."""
    entries()
    return _cache["excluded"]


def get(name: str) -> TorchOpEntry:
    """The entry called ``name`` (``"linalg.svd"``, ``"round.decimals_3"``, ``"add_"``
    for an in-place variant); a ``KeyError`` suggests close names."""
    by_name = _by_name()
    if name in by_name:
        return by_name[name]
    close = difflib.get_close_matches(name, list(by_name), n=3)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    raise KeyError(f"no op_db entry named {name!r}{hint}") from None


def _by_name() -> dict:
    if "by_name" not in _cache:
        _cache["by_name"] = {e.name: e for e in entries(inplace=True)}
    return _cache["by_name"]


def names(inplace: bool = False) -> list:
    """The entries' names, in op_db's order."""
    return [e.name for e in entries(inplace)]


def families(inplace: bool = False) -> list:
    """The entries' families, each once, in order of appearance."""
    return list(dict.fromkeys(e.family for e in entries(inplace)))


__all__ = ["REGISTRY", "TorchOpEntry", "TorchKnownFailure", "TorchDbUnavailable",
           "GRADIENT_TESTS", "DTYPE_ORDER", "available", "missing", "loaded", "entries",
           "excluded", "get", "names", "families", "dtype_named", "dtype_name", "family_of"]
