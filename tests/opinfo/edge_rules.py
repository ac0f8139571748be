"""The gradient each special sample should have, by the documented rules.

PyTorch's autograd notes ("Gradients for non-differentiable functions")
fix the gradient where an op is not differentiable: the gradient where it
exists; the minimum-norm subgradient where the op is locally convex (the
supergradient where concave); otherwise the value by continuity (``inf`` is
possible, sqrt at 0). Where several values qualify the note lets PyTorch
pick one; those picks (ties, kinks of elu and clamp) are PyTorch's
documented formulas, and each row says which.

``RULES[op][sample name]`` maps the sample's values to the expected gradient
of ``output.sum()`` for each tensor that requires grad, in the order of
``SampleInput.tensors()``. The values are worked out here with NumPy from
the sample's numbers, never by running the op's rule. ``out`` (the op's
output as NumPy arrays) is passed for the one rule that names it: max(dim)
and min(dim) send the gradient to the index they return.
"""
from __future__ import annotations

import numpy as np


def _sgn(x):
    mag = np.abs(x)
    return np.where(mag == 0, 0, x / np.where(mag == 0, 1, mag))


def _shared(x, dim, pick):
    """The gradient of amax/amin: 1 shared evenly among the extrema of each slice."""
    axis = None if dim in (None, ()) else dim
    hit = (x == pick(x, axis=axis, keepdims=True)).astype(float)
    return hit / hit.sum(axis=axis, keepdims=True)


def _prod_others(x, dim):
    """d prod / d x_i = the product of the other entries of its slice."""
    axis = -1 if dim is None else dim
    flat = x.reshape(-1) if dim is None else x
    moved = np.moveaxis(flat, axis, -1)
    grad = np.empty_like(moved)
    for i in range(moved.shape[-1]):
        grad[..., i] = np.prod(np.delete(moved, i, axis=-1), axis=-1)
    return np.moveaxis(grad, -1, axis).reshape(x.shape)


def _pow_at_zero(x, y):
    """d/dx x**y = y x**(y-1), 0 where y == 0; d/dy = x**y log x, 0 where x == 0 and y >= 0
    (the samples hold real numbers, also in complex dtypes)."""
    x, y = np.real(x), np.real(y)
    base = np.where(y == 0, 1.0, x)
    d_base = np.where(y == 0, 0.0, y * base ** (y - 1))
    d_exponent = np.where((x == 0) & (y >= 0), 0.0, x ** y * np.log(np.where(x == 0, 1.0, x)))
    return [d_base, d_exponent]


def _sqrt(x):
    """sqrt'(x) = 1 / (2 sqrt(x)); at 0 infinite by continuity. For a complex input the
    limit is complex infinity, whose direction is undefined: IEEE complex division
    1 / (0 + 0j) writes it inf + nan j (PyTorch's value)."""
    at_zero = complex(np.inf, np.nan) if np.iscomplexobj(x) else np.inf
    return [np.where(x == 0, at_zero, 0.5 / np.sqrt(np.where(x == 0, 1, x)))]


def cofactors(a):
    """The cofactor matrix of a square matrix, from its minors: d det(A) / dA."""
    a = np.asarray(a)
    n = a.shape[-1]
    out = np.zeros(a.shape, dtype=a.dtype)
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(a, i, axis=-2), j, axis=-1)
            out[..., i, j] = (-1) ** (i + j) * (np.linalg.det(minor) if n > 1 else 1.0)
    return out


def _to_index(out, x):
    """One-hot at the index max(dim)/min(dim) returned (dim 1 of a matrix)."""
    grad = np.zeros(x.shape)
    np.put_along_axis(grad, out[1][:, None], 1.0, axis=1)
    return grad


def ZERO(x, *args, out=None, **kwargs):
    """A gradient of 0 for the input (the only tensor requiring grad)."""
    return [np.zeros(x.shape)]


KINK = {"special points": lambda x, out=None: [(x > 0).astype(float)]}
CLAMP = {
    # PyTorch: the gradient passes to self where min <= self <= max, bounds included
    "at the bounds": lambda x, lo, hi, out=None: [((x >= lo) & (x <= hi)).astype(float)],
    # where min > max the result is max, so max receives the gradient
    "min > max": lambda x, lo, hi, out=None: [np.zeros(x.shape), np.zeros(lo.shape),
                                              np.ones(hi.shape)],
}
TIES_AMAX = {"ties along dim 1": lambda x, dim, out=None: [_shared(x, dim, np.max)],
             "ties, all dims": lambda x, out=None: [_shared(x, None, np.max)]}
TIES_AMIN = {"ties along dim 1": lambda x, dim, out=None: [_shared(x, dim, np.min)],
             "ties, all dims": lambda x, out=None: [_shared(x, None, np.min)]}
NORM_AT_ZERO = {f"ord={p} at 0": ZERO for p in (2, 1, 3, 1.5)}

RULES = {
    "relu": KINK, "nn.functional.relu": {"kinks": KINK["special points"]},
    # abs is convex: the minimum-norm subgradient at 0 is 0; elsewhere sgn(x)
    "abs": {"special points": lambda x, out=None: [_sgn(x)]},
    "sgn": {"special points": ZERO}, "sign": {"special points": ZERO},
    # by continuity: sqrt'(0) = inf
    "sqrt": {"special points": lambda x, out=None: _sqrt(x)},
    "clamp": CLAMP, "clip": CLAMP,
    "maximum": {"ties": lambda x, y, out=None: [(x > y) + 0.5 * (x == y),
                                                (y > x) + 0.5 * (x == y)]},
    "minimum": {"ties": lambda x, y, out=None: [(x < y) + 0.5 * (x == y),
                                                (y < x) + 0.5 * (x == y)]},
    "amax": TIES_AMAX, "amin": TIES_AMIN,
    "max": {"ties, all dims": lambda x, out=None: [_shared(x, None, np.max)],
            "dim, ties": lambda x, dim, out=None: [_to_index(out, x)]},
    "min": {"ties, all dims": lambda x, out=None: [_shared(x, None, np.min)],
            "dim, ties": lambda x, dim, out=None: [_to_index(out, x)]},
    # a norm is convex with its minimum at 0: the minimum-norm subgradient there is 0
    "linalg.vector_norm": {**NORM_AT_ZERO,
                           "inf-norm ties": lambda x, p, out=None: [
                               np.sign(x) * _shared(np.abs(x), None, np.max)]},
    "norm": {"fro at 0": ZERO},
    # PyTorch: 0**0 has gradient 0 for the base (exponent == 0 masked) and for the
    # exponent (base == 0 with exponent >= 0 masked); elsewhere the formulas
    "pow": {"0**0, tensor exponent": lambda x, y, out=None: _pow_at_zero(x, y),
            "0**0, number exponent": lambda x, y, out=None: [np.zeros(x.shape)]},
    "prod": {"one zero": lambda x, out=None: [_prod_others(x, None)],
             "one and two zeros in a slice": lambda x, dim, out=None: [_prod_others(x, dim)]},
    # softplus is x above the threshold: slope 1
    "nn.functional.softplus": {"kinks": lambda x, beta=1.0, threshold=20.0, out=None:
                               [np.ones(x.shape)]},
    # PyTorch's elu and leaky_relu take the x <= 0 branch at 0: alpha*exp(0), negative_slope
    "nn.functional.elu": {"kinks": lambda x, out=None: [np.where(x <= 0, np.exp(x), 1.0)]},
    "nn.functional.leaky_relu": {"kinks": lambda x, out=None: [np.where(x <= 0, 0.01, 1.0)]},
    # hardtanh is flat outside (-1, 1) and passes no gradient at its bounds
    "nn.functional.hardtanh": {"kinks": lambda x, out=None: [((x > -1) & (x < 1)).astype(float)]},
    # det is a polynomial, so rule 1 applies everywhere: the gradient is the cofactor
    # matrix (conjugated for complex input), singular matrices included. The samples are
    # to be added to opinfo/definitions/linalg.py under these names.
    "linalg.det": {name: lambda a, out=None: [np.conj(cofactors(a))]
                   for name in ("rank 1 of 2", "rank 2 of 3", "rank 1 of 3")},
    # floor, ceil, trunc, round are piecewise constant: gradient 0, at the jumps too;
    # frac = x - trunc(x) has slope 1
    **{n: {"at the jumps": ZERO} for n in ("floor", "ceil", "trunc", "round")},
    "frac": {"at the jumps": lambda x, out=None: [np.ones(x.shape)]},
    # x - q * y with the quotient q (trunc or floor of x / y) piecewise constant, its
    # derivative taken as 0 at a jump too: d/dx = 1, d/dy = -q
    "fmod": {"at a jump": lambda x, y, out=None: [np.ones(x.shape), -np.trunc(x / y)]},
    "remainder": {"at a jump": lambda x, y, out=None: [np.ones(x.shape), -np.floor(x / y)]},
    # xlogy(x, y) = x log y is linear in x, so rule 1 applies at x = 0 as anywhere:
    # d/dx = log y, d/dy = x / y
    "xlogy": {"self = 0": lambda x, y, out=None: [np.log(y), x / y]},
    # replaced entries are constants: gradient 0 there, 1 where x is finite
    "nan_to_num": {name: lambda x, out=None, **k: [np.isfinite(x).astype(float)]
                   for name in ("nan and infinities", "custom replacements")},
}
