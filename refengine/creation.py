"""Creation functions: tensor, zeros, ones, full, rand, randn, arange, ..."""
from __future__ import annotations

import numbers

import numpy as np

from . import dtypes
from .pytree import tree_leaves, tree_map
from .tensor import Tensor, wrap_array

# One generator for the process, as PyTorch's default generator: a seed set
# in one thread decides the draws of all. NumPy's Generator locks its bit
# generator on each draw, so threads may share it.
_rng = np.random.default_rng()


def _generator() -> np.random.Generator:
    return _rng


def manual_seed(seed: int) -> np.random.Generator:
    """Seed the generator behind rand, randn and dropout (for every thread)."""
    global _rng
    _rng = np.random.default_rng(int(seed))
    return _rng


def _np_dtype(dtype):
    return None if dtype is None else dtype.np


def _infer_dtype(arr: np.ndarray) -> np.dtype:
    kind = arr.dtype.kind
    if kind == "b":
        return np.dtype(np.bool_)
    if kind in "iu":
        return np.dtype(np.int64)
    if kind == "f":
        return dtypes.get_default_dtype().np
    if kind == "c":
        return dtypes.to_complex(dtypes.get_default_dtype()).np
    raise TypeError(f"can't convert data of type {arr.dtype} to a refengine tensor; "
                    "give numbers, nested lists of numbers, or a NumPy array")


def _as_array(data, dtype, copy: bool = True) -> np.ndarray:
    """A NumPy array for ``data``, with PyTorch's dtype inference for Python data."""
    if isinstance(data, Tensor):
        arr = data._data
    elif isinstance(data, (np.ndarray, np.generic)):
        arr = np.asarray(data)    # NumPy arrays and scalars keep their dtype
        if dtype is None:
            dtypes.from_numpy_dtype(arr.dtype)  # refuse unsupported dtypes clearly
    else:
        sequence = isinstance(data, (list, tuple))
        flat = _flat(data) if sequence else ()
        if any(isinstance(d, Tensor) for d in flat):
            data = tree_map(lambda d: d._data if isinstance(d, Tensor) else d, data,
                            is_leaf=_is_dict)
        arr = np.array(data)
        if dtype is None:
            numpy_scalars = sequence and data and all(isinstance(d, np.generic) for d in flat)
            if not numpy_scalars:
                arr = arr.astype(_infer_dtype(arr), copy=False)
    if dtype is not None:
        arr = arr.astype(dtype.np, copy=False)
    return np.array(arr, copy=True) if copy else arr


def _flat(data) -> list:
    """The numbers (or tensors) of nested sequences; a dict is one item, which
    NumPy will refuse."""
    return tree_leaves(data, is_leaf=_is_dict)


def _is_dict(value) -> bool:
    return isinstance(value, dict)


def _new(arr: np.ndarray, requires_grad: bool = False) -> Tensor:
    t = wrap_array(arr)   # Tensor(_array=arr) without the keyword handling
    if requires_grad:
        t._set_requires_grad(True, "Only Tensors of floating point and complex dtype can "
                                   "require gradients")
    return t


def tensor(data, dtype=None, requires_grad: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data`` (numbers, nested lists, an array).

    >>> refengine.tensor([1., 2.])
    tensor([1., 2.])
    """
    return _new(_as_array(data, dtype), requires_grad)


def as_tensor(data, dtype=None) -> Tensor:
    """A tensor sharing memory with ``data`` where possible."""
    if isinstance(data, Tensor) and (dtype is None or data.dtype is dtype):
        return data
    if isinstance(data, np.ndarray):
        return _new(_as_array(data, dtype, copy=False))
    return tensor(data, dtype)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing memory with a NumPy array (the dtype is kept)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    dtypes.from_numpy_dtype(array.dtype)
    return _new(array)


def _size(size) -> tuple:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for s in size:
        if not isinstance(s, (numbers.Integral, Tensor)):
            raise TypeError(f"sizes must be integers, got {type(s).__name__} in {tuple(size)}")
        if int(s) < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {int(s)}: "
                               f"{[int(x) for x in size]}")
    return tuple(int(s) for s in size)


def _float_dtype(dtype):
    return dtype if dtype is not None else dtypes.get_default_dtype()


def zeros(*size, dtype=None, requires_grad: bool = False) -> Tensor:
    return _new(np.zeros(_size(size), _float_dtype(dtype).np), requires_grad)


def ones(*size, dtype=None, requires_grad: bool = False) -> Tensor:
    return _new(np.ones(_size(size), _float_dtype(dtype).np), requires_grad)


def empty(*size, dtype=None, requires_grad: bool = False) -> Tensor:
    return _new(np.empty(_size(size), _float_dtype(dtype).np), requires_grad)


def full(size, fill_value, dtype=None, requires_grad: bool = False) -> Tensor:
    if dtype is None:
        dtype = dtypes.scalar_dtype(fill_value)
    return _new(np.full(_size((size,)), fill_value, dtype.np), requires_grad)


def _like(t: Tensor, dtype):
    return t.shape, (dtype if dtype is not None else t.dtype)


def zeros_like(input: Tensor, dtype=None, requires_grad: bool = False) -> Tensor:
    shape, dt = _like(input, dtype)
    return _new(np.zeros(shape, dt.np), requires_grad)


def ones_like(input: Tensor, dtype=None, requires_grad: bool = False) -> Tensor:
    shape, dt = _like(input, dtype)
    return _new(np.ones(shape, dt.np), requires_grad)


def empty_like(input: Tensor, dtype=None, requires_grad: bool = False) -> Tensor:
    shape, dt = _like(input, dtype)
    return _new(np.empty(shape, dt.np), requires_grad)


def full_like(input: Tensor, fill_value, dtype=None, requires_grad: bool = False) -> Tensor:
    shape, dt = _like(input, dtype)
    return _new(np.full(shape, fill_value, dt.np), requires_grad)


def _random_dtype(dtype, name: str):
    dt = _float_dtype(dtype)
    if not (dt.is_floating_point or dt.is_complex):
        raise NotImplementedError(f'"{name}" is not implemented for {dt}: give a floating or '
                                  "complex dtype (randint makes random integers)")
    return dt


def rand(*size, dtype=None, requires_grad: bool = False) -> Tensor:
    """Uniform on [0, 1); for complex dtypes both parts are."""
    dt = _random_dtype(dtype, "rand")
    shape = _size(size)
    real = _generator().random(shape)
    arr = real + 1j * _generator().random(shape) if dt.is_complex else real
    return _new(np.asarray(arr, dt.np), requires_grad)


def randn(*size, dtype=None, requires_grad: bool = False) -> Tensor:
    """Standard normal; for complex dtypes, variance 1/2 in each part, as PyTorch."""
    dt = _random_dtype(dtype, "randn")
    shape = _size(size)
    if dt.is_complex:
        arr = (_generator().standard_normal(shape) + 1j * _generator().standard_normal(shape))
        arr = arr / np.sqrt(2)
    else:
        arr = _generator().standard_normal(shape)
    return _new(np.asarray(arr, dt.np), requires_grad)


def randint(low, high=None, size=(), dtype=None) -> Tensor:
    if high is None:
        low, high = 0, low
    arr = _generator().integers(low, high, size=_size((size,)))
    return _new(arr.astype((dtype or dtypes.int64).np))


def arange(start, end=None, step=1, dtype=None, requires_grad: bool = False) -> Tensor:
    if end is None:
        start, end = 0, start
    if dtype is None:
        dtype = dtypes.result_type(start, end, step)
    return _new(np.arange(start, end, step).astype(dtype.np), requires_grad)


def linspace(start, end, steps: int, dtype=None, requires_grad: bool = False) -> Tensor:
    return _new(np.linspace(start, end, int(steps)).astype(_float_dtype(dtype).np), requires_grad)


def eye(n: int, m: int | None = None, dtype=None, requires_grad: bool = False) -> Tensor:
    return _new(np.eye(n, m, dtype=_float_dtype(dtype).np), requires_grad)
