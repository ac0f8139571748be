"""Fixtures of the harvest tests; the sample project is run by pytester-like
subprocesses, never collected here."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

collect_ignore = ["sample_project"]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


@pytest.fixture(autouse=True)
def one_thread():
    """torch on one intra-op thread (restored after): the harvested checks run
    many tiny evaluations, which torch's thread pool slows on a busy machine.
    Without torch (refengine's harvest tests) there is nothing to set."""
    try:
        import torch
    except ImportError:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def example():
    """examples/harvest_model.py as a module."""
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    import harvest_model
    return harvest_model
