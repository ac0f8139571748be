"""refengine dtypes and PyTorch's type-promotion rules.

A dtype wraps a NumPy dtype. Promotion follows PyTorch, not NumPy: an
integer tensor times a float32 tensor is float32, and a Python float never
widens a float32 tensor (NumPy would give float64 in both cases).
"""
from __future__ import annotations

import numpy as np


class dtype:
    """A refengine dtype (``refengine.float32`` ...)."""

    __slots__ = ("name", "np", "is_floating_point", "is_complex", "itemsize", "_category")

    def __init__(self, name: str, np_dtype, category: int):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.itemsize = self.np.itemsize
        self._category = category  # 0 bool, 1 integer, 2 floating, 3 complex
        self.is_floating_point = category == 2
        self.is_complex = category == 3

    def __repr__(self) -> str:
        return f"refengine.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))

    @property
    def is_signed(self) -> bool:
        return self._category != 0


bool_ = dtype("bool", np.bool_, 0)
int32 = dtype("int32", np.int32, 1)
int64 = dtype("int64", np.int64, 1)
float32 = dtype("float32", np.float32, 2)
float64 = dtype("float64", np.float64, 2)
complex64 = dtype("complex64", np.complex64, 3)
complex128 = dtype("complex128", np.complex128, 3)

ALL = (bool_, int32, int64, float32, float64, complex64, complex128)
_BY_NP = {d.np: d for d in ALL}
_NAMES = {d.name: d for d in ALL}
_TO_COMPLEX = {float32: complex64, float64: complex128, complex64: complex64, complex128: complex128}
_TO_REAL = {complex64: float32, complex128: float64}
# PyTorch's type names, used in error messages ("[refengine.FloatTensor [3]]").
TYPE_NAMES = {bool_: "BoolTensor", int32: "IntTensor", int64: "LongTensor",
              float32: "FloatTensor", float64: "DoubleTensor",
              complex64: "ComplexFloatTensor", complex128: "ComplexDoubleTensor"}
# PyTorch's scalar type names ("result type Float can't be cast to ... Long").
SCALAR_NAMES = {bool_: "Bool", int32: "Int", int64: "Long", float32: "Float", float64: "Double",
                complex64: "ComplexFloat", complex128: "ComplexDouble"}


def _by_name(name: str) -> dtype:
    return _NAMES[name]


def from_numpy_dtype(np_dtype) -> dtype:
    """The refengine dtype of a NumPy dtype; a TypeError names the supported ones."""
    d = _BY_NP.get(np_dtype)    # an array's dtype needs no np.dtype() round trip
    if d is not None:
        return d
    d = _BY_NP.get(np.dtype(np_dtype))
    if d is None:
        raise TypeError(
            f"refengine has no dtype for NumPy {np.dtype(np_dtype)}; supported: "
            + ", ".join(x.name for x in ALL))
    return d


def to_complex(d: dtype) -> dtype:
    return _TO_COMPLEX.get(d, d)


def to_real(d: dtype) -> dtype:
    return _TO_REAL.get(d, d)


class _DefaultDtype:
    # process-wide, as in PyTorch: a thread sees the default another thread set
    dtype = float32


_default = _DefaultDtype()


def get_default_dtype() -> dtype:
    """The dtype of Python floats and of floating creation functions (float32)."""
    return _default.dtype


def set_default_dtype(d: dtype) -> None:
    """Set the default floating dtype: float32 or float64, as in PyTorch."""
    if d not in (float32, float64):
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default.dtype = d


def promote_types(a: dtype | None, b: dtype | None) -> dtype | None:
    """The smallest dtype both ``a`` and ``b`` convert to, by PyTorch's lattice."""
    if a is None or a is b:
        return b
    if b is None:
        return a
    if a._category != b._category:
        high, low = (a, b) if a._category > b._category else (b, a)
        if high.is_complex and low is float64:
            return complex128
        return high
    return a if a.itemsize >= b.itemsize else b


def _combine(higher: dtype | None, lower: dtype | None) -> dtype | None:
    # A lower-priority operand (zero-dim tensor, Python number) only changes
    # the result when it is of a higher category.
    if higher is None:
        return lower
    if lower is None or higher.is_complex:
        return higher
    if lower.is_complex:
        return to_complex(higher) if higher.is_floating_point else lower
    if higher.is_floating_point:
        return higher
    if higher is bool_ or lower.is_floating_point:
        return promote_types(higher, lower)
    return higher


def scalar_dtype(value) -> dtype:
    """The dtype PyTorch gives a Python number in an operation."""
    kind = type(value)   # the plain Python types first: most numbers in rules are these
    if kind is float:
        return _default.dtype
    if kind is int:
        return int64
    if isinstance(value, (bool, np.bool_)):
        return bool_
    if isinstance(value, (int, np.integer)):
        return int64
    if isinstance(value, (float, np.floating)):
        return get_default_dtype()
    if isinstance(value, (complex, np.complexfloating)):
        return to_complex(get_default_dtype())
    raise TypeError(f"expected a number, got {type(value).__name__}")


def result_type(*operands) -> dtype:
    """PyTorch's result type: dimensioned tensors, then zero-dim tensors, then numbers."""
    dim = zero = wrapped = None
    for op in operands:
        if op is None:
            continue
        if not hasattr(op, "_wrapped_number"):
            wrapped = promote_types(wrapped, scalar_dtype(op))
        elif op._wrapped_number:
            wrapped = promote_types(wrapped, op._wrapped_number)
        elif op.ndim == 0:
            zero = promote_types(zero, op.dtype)
        else:
            dim = promote_types(dim, op.dtype)
    return _combine(dim, _combine(zero, wrapped))
