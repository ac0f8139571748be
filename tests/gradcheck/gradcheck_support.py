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


@pytest.fixture
def one_torch_thread():
    """torch on one intra-op thread for the test (restored after): the large
    checks of the scale tests evaluate many small batches, which torch's
    thread pool slows many fold on a busy machine."""
    try:
        import torch
    except ImportError:     # nothing to set: the refengine half of the tests still runs
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
