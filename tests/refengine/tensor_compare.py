"""Comparing a refengine tensor with torch's: dtype names, values, and a
default dtype that one test cannot leak into the next."""
from __future__ import annotations

import numpy as np
import pytest

import adcheck.refengine as E

try:
    import torch as _torch
except ImportError:  # the oracle is optional: tests that need it skip
    _torch = None


@pytest.fixture(autouse=True)
def _default_dtype_restored():
    """A test that changes the default dtype cannot leak it into the next one."""
    before = E.get_default_dtype()
    yield
    E.set_default_dtype(before)
    if _torch is not None:
        _torch.set_default_dtype(_torch.float32)


DTYPES = ["float32", "float64", "complex64", "complex128", "int64", "int32", "bool"]


def dtype_name(dt) -> str:
    """``float32`` for ``torch.float32`` and for ``refengine.float32``."""
    return repr(dt).split(".")[-1]


def as_array(t) -> np.ndarray:
    return np.asarray(t.detach().numpy())


def assert_same(ours, theirs, *, exact: bool = True):
    """Same dtype, shape and values (NaN equal to NaN)."""
    assert dtype_name(ours.dtype) == dtype_name(theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    a, b = as_array(ours), as_array(theirs)
    if exact:
        np.testing.assert_array_equal(a, b)
    else:
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7, equal_nan=True)
