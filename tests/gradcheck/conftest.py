"""Engine fixtures: the gradcheck suite runs on torch and on refengine."""
from __future__ import annotations

import pytest
from gradcheck_support import load_engine


@pytest.fixture(scope="module")
def jax_x64():
    """gradcheck needs float64: JAX's 64-bit mode, for the module that asks for it
    (``pytestmark = pytest.mark.usefixtures("jax_x64")``), put back after it."""
    jax = pytest.importorskip("jax", reason="jax is not installed (pip install adcheck[jax])")
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", previous)


@pytest.fixture(params=["torch", "refengine"])
def E(request):
    """The engine module (``torch`` or ``refengine``)."""
    return load_engine(request.param)
