"""Engine fixtures: the gradcheck suite runs on torch and on refengine."""
from __future__ import annotations

import pytest
from gradcheck_support import load_engine


@pytest.fixture(params=["torch", "refengine"])
def E(request):
    """The engine module (``torch`` or ``refengine``)."""
    return load_engine(request.param)
