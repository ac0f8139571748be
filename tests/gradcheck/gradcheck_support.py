"""Helpers shared by the gradcheck tests."""
from __future__ import annotations

import importlib

import pytest


def load_engine(name: str):
    """Import an engine module, or skip with the import error as the reason."""
    try:
        return importlib.import_module(name)
    except Exception as exc:  # refengine is written in parallel; say why we skip
        pytest.skip(f"{name} cannot be imported: {type(exc).__name__}: {exc}")
