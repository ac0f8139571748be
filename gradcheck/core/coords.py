"""Real coordinates: how tensors of any dtype become real vectors and back.

Every Jacobian in gradcheck is a real matrix. A real element contributes one
coordinate; a complex element contributes two, its real part then its
imaginary part (interleaved, so element ``k`` owns coordinates ``2k`` and
``2k + 1``). Complex inputs are thereby perturbed along the real and the
imaginary axis, and complex outputs are read through their real and imaginary
parts, which is what PyTorch's gradcheck does.
"""
from __future__ import annotations

import math

import numpy as np


def largest_finite(values, axis=None):
    """The largest finite ``|value|`` (0.0 where there is none): the scale of a
    block, whose NaN and inf entries are no scale. A float, or with ``axis`` an
    array along it."""
    magnitudes = np.abs(values)
    if axis is None and magnitudes.dtype.kind == "f" and magnitudes.size:
        # (the usual block holds no NaN or inf: its plain maximum, which a NaN would
        # propagate and an inf exceed every finite entry by, is then the answer, in a
        # third of the masked maximum's instructions; |x| >= 0 is the initial 0 too)
        top = float(np.maximum.reduce(magnitudes, axis=None))
        if math.isfinite(top):
            return top
    # (the array's own max: NumPy's np.max wrapper costs as much again on small blocks)
    top = magnitudes.max(axis=axis, initial=0.0, where=np.isfinite(magnitudes))
    return float(top) if axis is None else top


def norm(values) -> float:
    """The Euclidean norm of all of ``values`` (of the moduli of complex ones).

    A sum, not ``np.linalg.norm``: that is a BLAS dot, which from about 10,000
    entries wakes BLAS's threads, and they spin on the cores for a while after
    it, slowing what the check does next (a convolution's check: 15 ms more)."""
    values = np.asarray(values)
    if values.dtype.kind == "c":   # (np.iscomplexobj's answer for an array, a third of its cost)
        values = np.abs(values)
    # (the reduction ``sum()`` makes, without its Python frame; a float64 sum's root
    # by math.sqrt, correctly rounded as np.sqrt's, without a NumPy scalar's call)
    total = np.add.reduce(np.square(values), axis=None)
    return math.sqrt(total) if type(total) is np.float64 else float(np.sqrt(total))


def is_complex(array: np.ndarray) -> bool:
    """Whether ``array`` (an array, not a list) holds complex numbers."""
    return array.dtype.kind == "c"   # (np.iscomplexobj's answer, without its Python frames)


def real_size(shape, complex_: bool) -> int:
    """Number of real coordinates of an array of ``shape``."""
    # (math.prod of Python ints: this is asked for in inner loops, and NumPy's
    # prod costs microseconds per call)
    return math.prod(int(k) for k in shape) * (2 if complex_ else 1)


def real_view(array: np.ndarray) -> np.ndarray:
    """``to_real(array)``'s values, for reading only: a float64 array's own entries,
    flattened (a view where they are contiguous), else ``to_real``'s copy."""
    if type(array) is np.ndarray and array.dtype == np.float64:
        return array.reshape(-1)
    return to_real(array)


def to_real(array: np.ndarray) -> np.ndarray:
    """Flatten ``array`` into its real coordinates (a float64 copy)."""
    array = np.asarray(array)
    if is_complex(array):
        flat = array.ravel()
        return np.stack([flat.real, flat.imag], axis=-1).ravel().astype(np.float64)
    return array.astype(np.float64).ravel()


def to_real_rows(arrays: np.ndarray) -> np.ndarray:
    """``to_real`` of each ``arrays[k]``, as the rows of a float64 matrix (which
    may share memory with ``arrays``)."""
    arrays = np.asarray(arrays)
    flat = arrays.reshape(arrays.shape[0], math.prod(arrays.shape[1:]))
    if is_complex(flat):
        flat = np.stack([flat.real, flat.imag], axis=-1).reshape(flat.shape[0], 2 * flat.shape[1])
    return flat.astype(np.float64, copy=False)


def from_real_rows(vectors: np.ndarray, shape, dtype) -> np.ndarray:
    """``from_real`` of each row of ``vectors``, stacked: shape ``(rows, *shape)``."""
    vectors = np.asarray(vectors)
    return from_real(vectors.ravel(), (vectors.shape[0], *shape), dtype)


def from_real(vector: np.ndarray, shape, dtype) -> np.ndarray:
    """Build an array of ``shape`` and ``dtype`` from its real coordinates (it
    may share memory with ``vector``)."""
    if type(vector) is not np.ndarray or vector.dtype != np.float64:
        vector = np.asarray(vector, dtype=np.float64)
    # (a dtype's own kind; np.dtype(...) and np.issubdtype cost more, asked per evaluation)
    if (dtype.kind if isinstance(dtype, np.dtype) else np.dtype(dtype).kind) == "c":
        pairs = vector.reshape(-1, 2)
        values = pairs[:, 0] + 1j * pairs[:, 1]
        return values.reshape(shape).astype(dtype, copy=False)
    return vector.reshape(shape).astype(dtype, copy=False)


def complex_columns(block: np.ndarray, in_complex: bool) -> np.ndarray:
    """Combine a real block's column pairs into ``d/dx + 1j d/dy``.

    This is the form PyTorch compares: one column per input element, complex
    for a complex input (the conjugate Wirtinger gradient of each real output
    coordinate, times two), rows stay real output coordinates.
    """
    if not in_complex:
        return block
    return block[:, 0::2] + 1j * block[:, 1::2]


def complex_rows(block: np.ndarray, out_complex: bool) -> np.ndarray:
    """Combine a real block's row pairs into ``d Re + 1j d Im``."""
    if not out_complex:
        return block
    return block[0::2, :] + 1j * block[1::2, :]


def spacing(x: np.ndarray, eps: float) -> np.ndarray:
    """The gap between each of ``x`` and the next number of its binade in a
    dtype of machine epsilon ``eps`` (a power of two; 0 at 0 and where ``x`` is
    not finite). ``np.spacing`` would give float64's for values held in
    float64 that the engine computes in float32 or bfloat16."""
    size = np.abs(x)
    normal = np.isfinite(size) & (size > 0)
    return np.where(normal, 2.0 ** np.floor(np.log2(np.where(normal, size, 1.0))), 0.0) * eps


def rounding_unit(dtype) -> float:
    """Unit roundoff of ``dtype`` (of its real part for complex dtypes)."""
    dtype = np.dtype(dtype)
    if np.issubdtype(dtype, np.complexfloating) or np.issubdtype(dtype, np.floating):
        return float(np.finfo(dtype).eps)
    return float(np.finfo(np.float64).eps)
