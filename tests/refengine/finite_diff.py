"""An independent finite-difference oracle for the refengine op tests.

Everything is in real coordinates: a complex array of n elements is the
real vector (re_0, im_0, re_1, im_1, ...). The Jacobian of a function of
complex inputs is the Jacobian of that real map, built by central
differences with steps along the real axis (+-eps) and the imaginary axis
(+-i eps) of each entry. The vjp and jvp of refengine are checked against
these rows and columns (conjugate Wirtinger convention: the gradient of a
real loss L at z = x + iy is dL/dx + i dL/dy, which is exactly the row
of the real Jacobian read back as a complex number).

Deliberately written without the ``gradcheck`` package.
"""
from __future__ import annotations

import numpy as np


def real_view(a) -> np.ndarray:
    """The real coordinates of ``a`` as a flat float64 vector."""
    a = np.asarray(a)
    if np.iscomplexobj(a):
        return np.stack([a.real, a.imag], axis=-1).reshape(-1).astype(np.float64)
    return a.reshape(-1).astype(np.float64)


def real_size(a) -> int:
    """How many real coordinates ``a`` has."""
    a = np.asarray(a)
    return a.size * (2 if np.iscomplexobj(a) else 1)


def unit(a, coord: int) -> np.ndarray:
    """An array like ``a`` that is 0 except for real coordinate ``coord``:
    1 there (a real coordinate) or 1j (the imaginary part of a complex entry)."""
    a = np.asarray(a)
    out = np.zeros(a.shape, dtype=a.dtype)
    if np.iscomplexobj(a):
        out.reshape(-1)[coord // 2] = 1j if coord % 2 else 1
    else:
        out.reshape(-1)[coord] = 1
    return out


def jacobian(fn, inputs: list, eps: float = 1e-6) -> list:
    """Central-difference Jacobians of ``fn`` (a list of arrays -> a list of arrays).

    Returns ``J[out_idx][in_idx]``, a float64 matrix of shape
    (real size of output, real size of input).
    """
    inputs = [np.array(x, copy=True) for x in inputs]
    base = [np.asarray(o) for o in fn([x.copy() for x in inputs])]
    jac = [[np.zeros((real_size(o), real_size(x))) for x in inputs] for o in base]
    for in_idx, x in enumerate(inputs):
        for coord in range(real_size(x)):
            step = unit(x, coord) * eps
            plus = [y.copy() for y in inputs]
            minus = [y.copy() for y in inputs]
            plus[in_idx] = np.asarray(x + step)      # 0-d arrays: keep arrays, not scalars
            minus[in_idx] = np.asarray(x - step)
            f_plus, f_minus = fn(plus), fn(minus)
            for out_idx in range(len(base)):
                diff = (real_view(f_plus[out_idx]) - real_view(f_minus[out_idx])) / (2 * eps)
                jac[out_idx][in_idx][:, coord] = diff
    return jac


def gradient(fn, inputs: list, eps: float = 1e-6) -> list:
    """Central-difference gradient of a real scalar ``fn``: one real vector per input."""
    jac = jacobian(lambda xs: [np.asarray(fn(xs), dtype=np.float64).reshape(1)], inputs, eps)
    return [j[0] for j in jac[0]]


def assert_close(actual, expected, atol: float, rtol: float, what: str) -> None:
    """``|actual - expected| <= atol + rtol * |expected|`` entrywise, with a message that
    names ``what`` and where the largest error is."""
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    if actual.shape != expected.shape:
        raise AssertionError(f"{what}: shape {actual.shape} differs from the "
                             f"expected {expected.shape}")
    if actual.size == 0:
        return
    err = np.abs(actual - expected)
    bound = atol + rtol * np.abs(expected)
    bad = ~(err <= bound)
    if bad.any():
        where = np.unravel_index(np.argmax(np.where(np.isnan(err), np.inf, err)), err.shape)
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {err.size} entries differ; largest error "
            f"{err[where]:.3e} at {tuple(int(i) for i in where)} (got {actual[where]!r}, "
            f"expected {expected[where]!r})\nactual:\n{actual}\nexpected:\n{expected}")
