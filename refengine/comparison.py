"""Whole-tensor comparisons that return Python bools."""
from __future__ import annotations

import numpy as np

from .tensor import Tensor


def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)


def equal(input: Tensor, other: Tensor) -> bool:
    """True when both have the same shape and elements."""
    return input.shape == other.shape and bool(np.array_equal(input._data, other._data))


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-5, atol: float = 1e-8,
             equal_nan: bool = False) -> bool:
    """True when ``|input - other| <= atol + rtol * |other|`` everywhere."""
    return bool(np.allclose(input._data, other._data, rtol=rtol, atol=atol, equal_nan=equal_nan))
