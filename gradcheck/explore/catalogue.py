"""The special points explored, built from the given inputs.

A ``Candidate`` replaces some inputs (by index) with new arrays of the same
shape and dtype; everything else of the call stays as given. ``candidates``
yields them cheapest and most productive first: the quick tier (exact zeros,
ties, a few magnitudes), then the rest of the catalogue (tiny values down to
the smallest normal, huge ones, integers and half-integers, mostly-zero
inputs, repeated eigenvalues and singular values, complex values on the axes
and the unit circle), then random log-uniform magnitude sweeps until the
budget ends. The structure of a given input (positive, symmetric,
triangular) is kept in every candidate (``keep_structure``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: powers of ten for whole-input magnitudes in the quick tier and the full one;
#: the quick tier's 1000 is past exp's overflow (709.8), where a backward written
#: as exp(-x) / (1 + exp(-x)) is inf / inf (bench/explore_zoo.py's softplus)
QUICK_SCALES = (-8, 1.6, 3)       # 1e-8, about 40 and 1000
FULL_SCALES = (-300, -100, -30, -16, -12, -4, -2, 2, 3, 4, 8, 30, 100, 300)
#: entries of an input changed one at a time (spread over the input)
POSITIONS = 4


@dataclass
class Candidate:
    """New arrays for some inputs (``arrays`` by input index) and the kind
    of point they make (``kind``: "zero", "tie", "magnitude", ...)."""

    arrays: dict
    kind: str
    quick: bool = False


def keep_structure(given: np.ndarray, new: np.ndarray) -> np.ndarray:
    """``new`` with the structure ``given`` carries: all positive (zero is
    kept: it is the edge worth exploring), symmetric or triangular."""
    new = np.array(new, dtype=given.dtype, copy=True)
    if not np.iscomplexobj(given) and given.size and np.all(given > 0):
        new = np.abs(new)
    if given.ndim >= 2 and given.shape[-1] == given.shape[-2] and given.shape[-1] > 1:
        swap = np.swapaxes
        if np.array_equal(given, swap(given, -1, -2)):
            changed = new != given
            mirror = swap(changed, -1, -2) & ~changed
            new = np.where(mirror, swap(new, -1, -2), new)
            new = (new + swap(new, -1, -2)) / 2
        elif np.all(np.triu(given) == given):
            new = np.triu(new)
        elif np.all(np.tril(given) == given):
            new = np.tril(new)
    return new.astype(given.dtype, copy=False)


def positions(size: int) -> list:
    """Up to ``POSITIONS`` flat indices spread over an input of ``size``."""
    if size <= POSITIONS:
        return list(range(size))
    return sorted({0, size // 3, (2 * size) // 3, size - 1})


def _set(array, flat, value):
    out = array.copy()
    out.reshape(-1)[flat] = value
    return out


def _scaled(array, power):
    """``array``'s pattern with its largest entry at ``10**power``."""
    peak = np.max(np.abs(array)) if array.size else 0.0
    base = array / peak if peak > 0 else np.ones_like(array)
    return base * np.asarray(10.0 ** power).astype(base.real.dtype)


def quick(given: dict, explored: list) -> list:
    """The cheapest part of the catalogue: exact zeros, ties, three magnitudes."""
    out = []
    for i in explored:
        a = given[i]
        out.append(Candidate({i: np.zeros_like(a)}, "zero", True))
        out += [Candidate({i: _set(a, k, 0)}, "zero", True) for k in positions(a.size)]
        if a.size > 1:
            out.append(Candidate({i: _set(_set(a, 0, 0), a.size - 1, 0)}, "zero", True))
            out.append(Candidate({i: _set(a, 1, a.reshape(-1)[0])}, "tie", True))
            flat = a.reshape(-1)
            top = np.argsort(-np.abs(flat))[:2]
            out.append(Candidate({i: _set(a, int(top[1]), flat[top[0]])}, "tie", True))
            out.append(Candidate({i: np.full_like(a, flat[0])}, "tie", True))
        for j in explored:
            if j > i and given[j].shape == a.shape and given[j].dtype == a.dtype:
                out.append(Candidate({j: a.copy()}, "tie", True))
                out.append(Candidate({j: _set(given[j], 0, a.reshape(-1)[0])}, "tie", True))
        out += [Candidate({i: _scaled(a, p)}, "magnitude", True) for p in QUICK_SCALES]
    if len(explored) > 1:
        out.append(Candidate({i: np.zeros_like(given[i]) for i in explored}, "zero", True))
    return out


def cheapest_count(given: dict, explored: list) -> int:
    """At most how many points ``cheapest`` makes (before repeats are dropped)."""
    pairs = sum(1 for i in explored for j in explored if j > i
                and given[j].shape == given[i].shape and given[j].dtype == given[i].dtype)
    return 1 + len(explored) + pairs + len(QUICK_SCALES)


def cheapest(given: dict, explored: list) -> list:
    """The quick pass's few points: every input zero at once; in each input an
    exact zero among its entries and its two largest entries tied (one point:
    the full check and the shrinking tell them apart if it fails); each pair of
    inputs equal; all inputs at each of the three quick magnitudes at once."""
    out = [Candidate({i: np.zeros_like(given[i]) for i in explored}, "zero", True)]
    for i in explored:
        a = given[i]
        if a.size > 1:
            flat = a.reshape(-1)
            top = [int(k) for k in np.argsort(-np.abs(flat))[:2]]
            point = _set(a, top[1], flat[top[0]])
            rest = [k for k in range(a.size) if k not in top]
            out.append(Candidate({i: _set(point, rest[0], 0) if rest else point}, "zero", True))
        for j in explored:
            if j > i and given[j].shape == a.shape and given[j].dtype == a.dtype:
                out.append(Candidate({j: a.copy()}, "tie", True))
    out += [Candidate({i: _scaled(given[i], p) for i in explored}, "magnitude", True)
            for p in QUICK_SCALES]
    return out


def full(given: dict, explored: list) -> list:
    """The rest of the catalogue, input by input."""
    out = []
    for i in explored:
        a = given[i]
        flat = a.reshape(-1)
        real = a.real.dtype if np.iscomplexobj(a) else a.dtype
        tiny = float(np.finfo(real).tiny)
        out += [Candidate({i: _scaled(a, p)}, "magnitude") for p in FULL_SCALES]
        out += [Candidate({i: -a}, "sign")]
        for k in positions(a.size)[:2]:
            for value in (tiny, -tiny, 1e-12, 1e-30, 1e8, -1e8, 40.0, -40.0):
                out.append(Candidate({i: _set(a, k, value)}, "magnitude"))
        for value in (1.0, -1.0, 0.5, -0.5, 2.0):
            out.append(Candidate({i: np.full_like(a, value)}, "integer"))
        out.append(Candidate({i: np.round(a)}, "integer"))
        out.append(Candidate({i: np.round(2 * a) / 2}, "integer"))
        out += [Candidate({i: _set(np.zeros_like(a), k, flat[k])}, "mostly-zero")
                for k in positions(a.size)[:2]]
        out += _matrices(a, i)
        out += _complex(a, i)
    return out


def _matrices(a: np.ndarray, i: int) -> list:
    """Identity, repeated eigenvalues and repeated singular values (none for a
    single row or column: one singular value, nothing to repeat)."""
    if a.ndim < 2 or min(a.shape[-2:]) < 2:
        return []
    m, n = a.shape[-2:]
    out = []
    rng = np.random.default_rng(a.size)
    if m == n:
        eye = np.broadcast_to(np.eye(n, dtype=a.dtype), a.shape)
        out.append(Candidate({i: eye.copy()}, "repeated-eigenvalue"))
        q, _ = np.linalg.qr(rng.standard_normal((n, n)))
        values = np.arange(1.0, n + 1.0)
        values[1] = values[0]
        sym = (q * values) @ q.T
        out.append(Candidate({i: np.broadcast_to(sym, a.shape).astype(a.dtype)},
                             "repeated-eigenvalue"))
    u, _ = np.linalg.qr(rng.standard_normal((m, m)))
    v, _ = np.linalg.qr(rng.standard_normal((n, n)))
    k = min(m, n)
    s = np.arange(k, 0.0, -1.0)
    s[1] = s[0]
    low = (u[:, :k] * s) @ v[:, :k].T
    out.append(Candidate({i: np.broadcast_to(low, a.shape).astype(a.dtype)},
                         "repeated-singular-value"))
    return out


def _complex(a: np.ndarray, i: int) -> list:
    """Complex values on the real and the imaginary axis, on the unit circle."""
    if not np.iscomplexobj(a):
        return []
    unit = np.where(a == 0, 1.0, a / np.where(a == 0, 1.0, np.abs(a)))
    return [Candidate({i: a.real.astype(a.dtype)}, "complex-axis"),
            Candidate({i: (1j * a.imag).astype(a.dtype)}, "complex-axis"),
            Candidate({i: unit.astype(a.dtype)}, "unit-circle"),
            Candidate({i: _set(a, 0, 1.0)}, "unit-circle")]


def sweep(given: dict, explored: list, rng) -> Candidate:
    """One random point: some entries of one input at a log-uniform magnitude
    between 1e-12 and 1e12, either sign."""
    i = explored[int(rng.integers(len(explored)))]
    a = given[i].copy()
    flat = a.reshape(-1)
    chosen = rng.random(flat.size) < max(0.25, 1.0 / max(flat.size, 1))
    size = int(chosen.sum())
    magnitudes = 10.0 ** rng.uniform(-12, 12, size) * rng.choice([-1.0, 1.0], size)
    flat[chosen] = magnitudes.astype(flat.dtype) if size else flat[chosen]
    return Candidate({i: a}, "magnitude")


def candidates(given: dict, explored: list, rng, include_full: bool = True):
    """Every candidate once, structure kept: the quick tier, then (with
    ``include_full``) the full catalogue and random sweeps without end;
    without it, only the quick pass's ``cheapest`` points."""
    seen = set()

    def fresh(candidate):
        arrays = {i: keep_structure(given[i], a) for i, a in candidate.arrays.items()}
        arrays = {i: a for i, a in arrays.items() if not np.array_equal(a, given[i])}
        key = tuple((i, arrays[i].tobytes()) for i in sorted(arrays))
        if not arrays or key in seen:
            return None
        seen.add(key)
        return Candidate(arrays, candidate.kind, candidate.quick)

    first = quick(given, explored) + full(given, explored) if include_full else cheapest(
        given, explored)
    for candidate in first:
        made = fresh(candidate)
        if made is not None:
            yield made
    while include_full:
        made = fresh(sweep(given, explored, rng))
        if made is not None:
            yield made
