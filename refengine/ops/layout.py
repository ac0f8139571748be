"""The memory layout of an elementwise result: torch's, not NumPy's.

torch computes its elementwise ops with a TensorIterator, which allocates
the output in a dimension order read from the operands' strides; NumPy's
ufuncs (``order='K'``) follow the operands only while they agree and fall
back to C order otherwise. The order is observable: with ``b`` a narrow of a
2 x 3 tensor, ``(a - b).t() * b`` is laid out as its transposed operand in
torch, so its ``view(-1)`` raises. The dispatcher hands every result of an
op flagged ``iterated`` (``opdef.defop``) to ``arrange`` here.

torch's rule, as torch 2.13 behaves (tests/refengine/test_elementwise_layout.py
compares it with torch on a table of layouts):

- every operand contiguous: a contiguous result;
- every operand of the result's shape, dense (no gaps, no overlaps) and with
  the same strides: those strides;
- otherwise a permutation of the dims, innermost first, found by insertion
  sort from C order; two dims are ordered by the first operand whose strides
  for both are nonzero and differ (the smaller stride inner); equal strides
  put the larger dim outer or defer to the next operand; a broadcast dim
  (stride 0, or size 1 in an operand where the result's size is not 1)
  defers; when no operand decides, the pair stays as it is. The result is
  dense in that order.

Operands are the tensor inputs, in the order torch's kernel adds them, and
the Python numbers torch wraps as 0-dim tensors (``x * 2``; not the
Scalars some kernels take whole: ``pow``'s exponent, ``clamp``'s bounds,
``lerp``'s weight). A 0-dim operand never decides an order, but it makes
the shapes differ, which rules out the first two cases. (An operand cast to
the common dtype is first copied by torch's ``to``, which orders its dims
the same way, so its original strides decide the same.)

``c_order`` is the layout of torch's reductions, scans and softmax (C
order). ``preserved`` is torch's ``preserve_format`` copy (``clone``, ``to``,
``empty_like``): the same rule with the input as the only operand, so a
dense input keeps its strides and one with gaps keeps its order of dims.
"""
from __future__ import annotations

import numpy as np

# ops with an elementwise batching rule that torch does not compute with a
# TensorIterator: views and aliases, and the copies that keep a dense input's
# strides (``clone``'s and ``to``'s preserve_format, in their own forwards)
NOT_ITERATED = frozenset({"conj_op", "conj_physical", "real_op", "imag_op", "alias", "clone",
                          "to_dtype", "copy", "fill", "zero"})
# torch adds these kernels' operands in another order than refengine's inputs
_ORDER = {"threshold_backward": ("self", "grad_output"), "rsub": ("other", "self")}
# a number given here is a Scalar of the kernel, not an operand
_SCALAR_ARGUMENTS = {"pow": ("exponent",), "clamp": ("min", "max"), "lerp": ("weight",)}


def arrange(op, results: list, tensors: dict) -> list:
    """``results`` of the elementwise ``op`` laid out as torch lays out its output."""
    for t in tensors.values():
        a = t._data
        if not a.flags.c_contiguous and not _descending(a.strides):
            break
    else:   # every operand orders its dims as C order does, or defers: so does torch
        if results[0].flags.c_contiguous:
            return results
        return [np.ascontiguousarray(r) for r in results]
    shape = results[0].shape
    if op.name == "pow" and tensors["self"]._wrapped_number is not None:
        strides = _c_strides(shape)    # a number to a tensor power: torch allocates C order
    else:
        key = (shape, *_operands(op, tensors))
        strides = _SEEN.get(key)
        if strides is None:
            if len(_SEEN) > 4096:
                _SEEN.clear()
            strides = _SEEN[key] = output_strides(shape, key[1:])
    return [_laid_out(r, strides) for r in results]


# the rule's answers (a check repeats a few layouts many times): (shape, *operands) -> strides
_SEEN: dict = {}


def c_order(op, results: list, tensors: dict) -> list:
    """``results`` in C order: torch allocates the results of its reductions,
    scans and softmax so, whatever the input's layout."""
    for r in results:
        if not r.flags.c_contiguous:
            return [np.ascontiguousarray(r) for r in results]
    return results


def _descending(strides: tuple) -> bool:
    """The nonzero strides fall from the first dim to the last: every pair of
    dims this operand can order (both strides nonzero) it orders as C order."""
    last = 0
    for st in strides:
        if st:
            if last and st >= last:
                return False
            last = st
    return True


def _operands(op, tensors: dict) -> list:
    """(shape, strides in elements) of each of torch's operands, in its order."""
    whole = _SCALAR_ARGUMENTS.get(op.name, ())
    found = []
    for name in _ORDER.get(op.name, op.inputs):
        t = tensors.get(name)
        if t is not None and not (name in whole and t._wrapped_number is not None):
            found.append(_geometry(t._data))
    return found


def _geometry(a: np.ndarray) -> tuple:
    size = a.itemsize
    return a.shape, tuple([st // size for st in a.strides])


def preserved(a: np.ndarray, dtype=None) -> np.ndarray:
    """A copy of ``a`` (cast to the NumPy ``dtype``) laid out as torch's
    ``preserve_format`` lays out a copy: C order stays C order."""
    if a.flags.c_contiguous:
        return a.astype(dtype) if dtype is not None else a.copy()
    return _laid_out(a, output_strides(a.shape, [_geometry(a)]), dtype, copy=True)


def output_strides(shape: tuple, operands: list) -> tuple:
    """The strides (in elements) torch gives the output of an elementwise op of
    ``shape`` whose operands have these ``(shape, strides)``."""
    if all([s == shape for s, _ in operands]):
        if all([_contiguous(s, st) for s, st in operands]):
            return _c_strides(shape)
        first = operands[0][1]
        if all([st == first for _, st in operands]) and _dense(shape, first):
            return first
    ndim = len(shape)
    rows = [_aligned(s, st, shape) for s, st in operands]
    perm = list(range(ndim - 1, -1, -1))          # innermost first
    for i in range(1, ndim):
        inner = i
        for outer in range(i - 1, -1, -1):
            order = _compare(rows, shape, perm[outer], perm[inner])
            if order > 0:
                perm[outer], perm[inner] = perm[inner], perm[outer]
                inner = outer
            elif order < 0:
                break
    if all([d == ndim - 1 - k for k, d in enumerate(perm)]):
        return _c_strides(shape)
    strides, step = [0] * ndim, 1
    for d in perm:
        strides[d] = step
        step *= shape[d]
    return tuple(strides)


def _compare(rows: list, shape: tuple, d0: int, d1: int) -> int:
    """1: ``d0`` goes outside ``d1``; -1: it stays inside; 0: no operand decides."""
    for row in rows:
        s0, s1 = row[d0], row[d1]
        if s0 == 0 or s1 == 0:
            continue
        if s0 != s1:
            return -1 if s0 < s1 else 1
        if shape[d0] > shape[d1]:
            return 1
    return 0


def _aligned(shape: tuple, strides: tuple, out: tuple) -> list:
    """An operand's strides against the result's dims: 0 where it is broadcast."""
    pad = len(out) - len(shape)
    row = [0] * pad
    for i, n in enumerate(shape):
        row.append(0 if n == 1 and out[pad + i] != 1 else strides[i])
    return row


def _c_strides(shape: tuple) -> tuple:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _contiguous(shape: tuple, strides: tuple) -> bool:
    if 0 in shape:
        return True
    step = 1
    for n, st in zip(reversed(shape), reversed(strides)):
        if n != 1:
            if st != step:
                return False
            step *= n
    return True


def _dense(shape: tuple, strides: tuple) -> bool:
    """No gaps and no repeats (dims of size 0 or 1 address nothing)."""
    step = 1
    for st, n in sorted([(st, n) for n, st in zip(shape, strides) if n > 1]):
        if st != step:
            return False
        step *= n
    return True


def _laid_out(result: np.ndarray, strides: tuple, dtype=None, copy=False) -> np.ndarray:
    """``result`` (cast to ``dtype``) with these strides (in elements): itself when
    it has them already and no copy is asked for."""
    dtype = result.dtype if dtype is None else np.dtype(dtype)
    size = dtype.itemsize
    in_bytes = tuple([st * size for st in strides])
    if not copy and result.strides == in_bytes and dtype == result.dtype:
        return result
    extent = 1
    for n, st in zip(result.shape, strides):
        if n == 0:
            extent = 0
            break
        extent += (n - 1) * st
    out = np.ndarray(result.shape, dtype, buffer=np.empty(extent, dtype), strides=in_bytes)
    np.copyto(out, result, casting="unsafe")
    return out
