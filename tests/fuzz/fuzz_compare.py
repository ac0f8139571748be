"""The first observation where refengine's run and torch's run disagree."""
from __future__ import annotations

import numpy as np

from fuzz_engine import ATOL, RTOL, Difference


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape or a.dtype.kind != b.dtype.kind:
        return False
    if a.dtype.kind == "c":
        return _close(a.real, b.real) and _close(a.imag, b.imag)
    if a.dtype.kind not in "fc":
        return bool(np.array_equal(a, b))
    if not np.array_equal(np.isnan(a), np.isnan(b)):
        return False
    if not np.array_equal(np.where(np.isinf(a), a, 0), np.where(np.isinf(b), b, 0)):
        return False
    finite = np.isfinite(b) & np.isfinite(a)
    scale = max(1.0, float(np.max(np.abs(b[finite]), initial=0.0)))
    return bool(np.allclose(a[finite], b[finite], rtol=RTOL, atol=ATOL * scale))


def same(a, b) -> bool:
    """Whether two observed things agree (arrays within tolerance)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and _close(a, b)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, complex) and isinstance(b, complex):
        return _close(np.array([a]), np.array([b]))
    return a == b


_ORDER = ("flags", "value", "version", "tangent", "grad")


def _what_differs(a, b) -> str | None:
    """The kind of disagreement between two observations, or None."""
    if a[0] != b[0]:
        return "raises" if "raises" in (a[0], b[0]) else "flags"
    if a[0] == "raises":
        return "error-type" if a[1] != b[1] else ("message" if a[2] != b[2] else None)
    if a[0] == "tensor":
        for field in _ORDER:
            if field in a[1] and not same(a[1][field], b[1].get(field)):
                return field
        return None
    if a[0] == "seq":
        if len(a[1]) != len(b[1]):
            return "flags"
        return next((k for k in map(_what_differs, a[1], b[1]) if k), None)
    if a[0] == "hook":
        return None if same(a[1], b[1]) else "hooks"
    return None if same(a[1], b[1]) else "value"


def _short(observation) -> str:
    text = repr(observation)
    return text if len(text) < 600 else text[:600] + "..."


def first_difference(ref: list, tor: list) -> Difference | None:
    """The first disagreement of two ``observe`` records, or None."""
    for (la, kind, a), (lb, _, b) in zip(ref, tor):
        if la != lb:
            hooks = "hook" in la or "hook" in lb
            step = la.split()[0] if la.split()[0] == lb.split()[0] else min(la, lb)
            return Difference("hooks" if hooks else "raises", kind, step,
                              f"{la}: {_short(a)}", f"{lb}: {_short(b)}")
        what = _what_differs(a, b)
        if what is not None:
            return Difference(what, kind, la, _short(a), _short(b), raw=(a, b))
    if len(ref) != len(tor):
        longer = ref if len(ref) > len(tor) else tor
        extra = longer[min(len(ref), len(tor))]
        return Difference("hooks" if "hook" in extra[0] else "raises", extra[1], extra[0],
                          _short(ref[len(tor):][:1]), _short(tor[len(ref):][:1]))
    return None


def arrays_of(found):
    """The two arrays the difference is about, or (None, None); the tensors of a
    tuple (the gradients grad() returns) flattened into one."""
    def pick(obs):
        if obs is None:
            return None
        if obs[0] == "hook":
            return obs[1]
        if obs[0] == "tensor":
            return obs[1].get(found.kind)
        if obs[0] == "seq":
            parts = [pick(x) for x in obs[1] if x[0] == "tensor"]
            if parts and all(isinstance(p, np.ndarray) for p in parts):
                return np.concatenate([p.ravel().astype(complex if any(
                    np.iscomplexobj(q) for q in parts) else p.dtype) for p in parts])
        return None
    ref, tor = (pick(obs) for obs in found.raw)
    if isinstance(ref, np.ndarray) and isinstance(tor, np.ndarray) and ref.shape == tor.shape:
        return ref, tor
    return None, None


def elements_that_differ(ref, tor):
    """Where the two differ beyond rounding, a complex element in either part
    (nan + 0.3j is not nan + nanj)."""
    with np.errstate(all="ignore"):
        return ~(np.isclose(ref.real, tor.real, rtol=RTOL, atol=1e-12, equal_nan=True)
                 & np.isclose(np.imag(ref), np.imag(tor), rtol=RTOL, atol=1e-12,
                              equal_nan=True))
