import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

import pytest

try:
    import torch as _torch
except ImportError:  # the oracle is optional: tests that need it skip
    _torch = None


@pytest.fixture
def torch():
    """The torch module, the oracle for the expectations; skips without it."""
    if _torch is None:
        pytest.skip("torch is not installed")
    return _torch
