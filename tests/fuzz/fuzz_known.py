"""Differences the fuzzer reports but that are not findings.

``KNOWN`` (and ``SINGULAR``, the NaN and inf patterns at singular points)
are deliberate: each names its entry in docs/differences.md. ``OPEN`` are
real differences not fixed, each saying why: none of them is a difference
in a value, a gradient or whether an error is raised. A difference matches an entry when its kind is the
entry's kind, its statement template matches the entry's pattern, and the
entry's test accepts it (given the program's text).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class Entry:
    """A class of differences: kind, statement-template regex, a test of the
    difference and the program's text, and the reason."""

    kind: str
    stmt: str
    test: Callable[[object, str], bool]
    why: str

    def matches(self, found, source: str) -> bool:
        return (found.kind == self.kind and re.search(self.stmt, found.stmt) is not None
                and self.test(found, source))


def _same_before_hint(found, source: str) -> bool:
    return found.refengine.split("Hint:")[0] == found.torch.split("Hint:")[0]


def _torch_drops_imaginary_tangent(found, source: str) -> bool:
    """torch drops the imaginary part of a real input's share of a complex tangent."""
    ref, tor = (obs[1].get("tangent") if obs and obs[0] == "tensor" else None
                for obs in found.raw)
    if not (isinstance(ref, np.ndarray) and isinstance(tor, np.ndarray)) or ref.shape != tor.shape:
        return False
    # the part of a real input is real in torch: the real parts agree, the
    # imaginary ones do not (all of it when the real input is the only dual one);
    # elements where either is not finite are the singular-point class
    with np.errstate(all="ignore"):
        finite = np.isfinite(ref) & np.isfinite(tor)
        return bool(np.allclose(ref.real[finite], tor.real[finite]))


def _complex_self_division(found, source: str) -> bool:
    """The program divides a complex tensor by itself (x / x, x.div_(x))."""
    return "complex128" in source and re.search(
        r"\b(v\d+)\.div_\(\1\)|\b(v\d+) / \2\b", source) is not None


def _not_all_equal(found, source: str) -> bool:
    """Both computed a result (of the same shape) that differs."""
    ref, tor = _arrays(found)
    return ref is not None


def _sign_of_imaginary(found, source: str) -> bool:
    """The two differ only in the sign of some imaginary parts."""
    ref, tor = _arrays(found)
    if ref is None or not np.iscomplexobj(ref):
        return False
    with np.errstate(all="ignore"):
        return bool(np.allclose(ref.real, tor.real, equal_nan=True)
                    and np.allclose(np.abs(ref.imag), np.abs(tor.imag), equal_nan=True))


def _angle_sign_of_pi(found, source: str) -> bool:
    """The two differ only where one has pi and the other -pi."""
    ref, tor = _arrays(found)
    if ref is None:
        return False
    with np.errstate(all="ignore"):
        off = ~np.isclose(ref, tor, rtol=1e-9, atol=1e-12, equal_nan=True)
        return bool(off.any() and np.allclose(np.abs(ref[off]), np.pi)
                    and np.allclose(ref[off], -tor[off]))


def _rounding_magnified(found, source: str) -> bool:
    """The two agree to a relative 1e-6 (the fuzzer asks 1e-9)."""
    ref, tor = _arrays(found)
    if ref is None:
        return False
    with np.errstate(all="ignore"):
        return bool(np.allclose(ref, tor, rtol=1e-6, atol=1e-12, equal_nan=True))


def _torch_hook_gets_zeros(found, source: str) -> bool:
    """torch called a hook with an all-zero gradient where refengine did not call it."""
    ref, tor = found.raw
    if tor is None:     # a difference at the end: read the texts
        return (re.fullmatch(r"s\d+ hook \d+: \('hook', array\([-0.,\s\[\]]*\)\)", found.torch)
                is not None and "hook" not in found.refengine)
    return (tor[0] == "hook" and isinstance(tor[1], np.ndarray)
            and not np.any(tor[1]) and (ref is None or ref[0] != "hook"))


def _torch_is_leaf_assert(found, source: str) -> bool:
    """torch's is_leaf raised (an internal assert) on a view_as_real view of a
    base that detach_() cut and an in-place op then wrote."""
    obs = found.raw[1]
    flags = obs[1].get("flags") if obs and obs[0] == "tensor" else None
    return (flags is not None and flags[3] == ("raises", "RuntimeError")
            and "view_as_real" in source and ".detach_()" in source)


KNOWN = (
    Entry("message", ".*", _same_before_hint,
          "docs/differences.md: the saved-tensor version error ends with a hint that names "
          "the fix (clone before the in-place op) instead of torch's anomaly-mode hint"),
    Entry("version", ".*", lambda found, source: found.refengine.startswith("('seq'"),
          "docs/differences.md: `_version` of gradients made by backward formulas (torch "
          "builds some with in-place kernels)"),
    Entry("version", ".*", lambda found, source: "inference_mode" in source,
          "docs/differences.md: `_version` of results computed from inference tensors"),
    *(Entry(kind, ".*", lambda found, source: "Could this error message be improved" in
            found.torch,
            "docs/differences.md: torch fails an internal check (a real input whose gradient "
            "comes back complex through where/abs) where refengine computes the gradient")
      for kind in ("raises", "hooks", "message")),
    *(Entry(kind, ".*", lambda found, source: "ZeroTensors are immutable" in found.torch,
            "docs/differences.md: torch's zero gradients of sgn are ZeroTensors, which a "
            "second accumulation refuses")
      for kind in ("raises", "hooks")),
    *(Entry(kind, ".*", lambda found, source: ".conj()" in source,
            "docs/differences.md: conj() is a copy, not a lazily conjugated view")
      for kind in ("value", "version", "flags", "raises", "tangent", "grad")),
    Entry("tangent", r"pow|\*\*", _torch_drops_imaginary_tangent,
          "docs/differences.md: forward mode through a real input of a complex result "
          "(pow with a complex exponent): torch keeps only the real part of the tangent"),
    *(Entry(kind, ".*", _complex_self_division,
            "docs/differences.md: a complex tensor divided by itself is exactly 1 in refengine, "
            "1 plus a rounding error in torch's vectorised kernel, which a branch cut or a pole "
            "after it magnifies")
      for kind in ("value", "tangent", "grad", "hooks")),
    *(Entry(kind, r"copy_", _not_all_equal,
            "docs/differences.md: copy_ from a source that overlaps the destination in part: "
            "refengine copies the source's values from before the write, torch element by "
            "element in its kernel's order")
      for kind in ("value", "tangent")),
    Entry("value", r"E\.acosh", _sign_of_imaginary,
          "docs/differences.md: acosh of a real below 1 with a -0 imaginary part is on the "
          "lower side of the cut in refengine (C99's cacosh), the upper in torch"),
    Entry("value", r"E\.angle", _angle_sign_of_pi,
          "docs/differences.md: angle of a negative real with a -0 imaginary part is -pi "
          "(atan2's), torch's vectorised kernel gives +pi at some positions"),
    Entry("hooks", ".*", lambda found, source: ("E.cumprod" in source or ".prod(" in source)
          and "create_graph" in source,
          "docs/differences.md: the backward formulas of prod and cumprod do not read their "
          "result, so a hook on the result does not fire in double backward (torch's read it)"),
    *(Entry(kind, ".*", lambda found, source: "complex128" in source and (
            "E.pow(" in source or " ** " in source),
            "docs/differences.md: a complex power is computed by NumPy's cpow in refengine, by "
            "exp(y log x) in torch: an exact zero in one is a rounding error in the other, "
            "which a branch cut or atan2 after it turns into another value")
      for kind in ("value", "tangent")),
    *(Entry(kind, r"E\.atanh|E\.acosh", _rounding_magnified,
            "docs/differences.md: atanh near 1 and acosh near 1 magnify a last-bit difference "
            "of torch's and NumPy's tanh, exp, ... beyond the fuzzer's 1e-9")
      for kind in ("value", "tangent")),
    Entry("hooks", ".*", _torch_hook_gets_zeros,
          "docs/differences.md: torch calls a hook with zeros through a backward formula "
          "whose derivative is identically zero (relu's backward reading its result) in double "
          "backward; refengine records no such edge"),
    *(Entry(kind, ".*", lambda found, source: "E.acosh(" in source and "complex128" in source,
            "docs/differences.md: acosh's derivative for complex z is 1/(sqrt(z-1) sqrt(z+1)) "
            "in refengine; torch's (z^2-1)^(-1/2) has the wrong sign where Re z < 0")
      for kind in ("tangent", "grad", "hooks")),
    Entry("raises", r"norm", lambda found, source: "_is_zerotensor() INTERNAL ASSERT" in found.torch,
          "docs/differences.md: torch fails an internal assert in norm's tangent when the "
          "tangent is sgn's ZeroTensor; refengine's zero tangent gives 0"),
    Entry("flags", ".*", _torch_is_leaf_assert,
          "docs/differences.md: torch fails an internal assert reading is_leaf of a "
          "view_as_real view whose base was detached in place and then written"),
)

def _arrays(found):
    """The two arrays the difference is about, or (None, None)."""
    def pick(obs):
        if obs is None:
            return None
        if obs[0] == "hook":
            return obs[1]
        if obs[0] == "tensor":
            return obs[1].get(found.kind)
        return None
    ref, tor = (pick(obs) for obs in found.raw)
    if isinstance(ref, np.ndarray) and isinstance(tor, np.ndarray) and ref.shape == tor.shape:
        return ref, tor
    return None, None


def _only_where_not_finite(found, source: str) -> bool:
    """The two agree wherever both are finite: they differ in a NaN, an inf or
    a number where the other has NaN or inf (a singular point)."""
    ref, tor = _arrays(found)
    if ref is None:
        return False
    finite = np.isfinite(ref) & np.isfinite(tor)
    if finite.all():
        return False
    with np.errstate(all="ignore"):
        return bool(np.allclose(ref[finite], tor[finite], rtol=1e-9, atol=1e-12))


def _version_error_description(found, source: str) -> bool:
    marker = "modified by an inplace operation"
    return marker in found.refengine and marker in found.torch


SINGULAR = tuple(
    Entry(kind, ".*", _only_where_not_finite,
          "docs/differences.md: which non-finite value at a singular point (NaN and inf "
          "patterns: pow of 0 to a complex power, complex arithmetic with a NaN part, ...)")
    for kind in ("value", "grad", "tangent", "hooks"))

OPEN = (
    Entry("message", ".*", _version_error_description,
          "the saved-tensor version error describes the tensor otherwise: the node of a "
          "regenerated view (torch: AsStrided) or of the op that saved it, and 0-dim complex "
          "tensors (torch: [CPUComplexDoubleType []])"),
    Entry("message", ".*", lambda found, source: "Inference tensors cannot be saved" in found.torch
          or "A view was created in" in found.torch,
          "torch checks an op's inputs for autograd (refusing to save inference tensors, reading "
          "the grad_fn of a view made in no_grad or inference mode whose base was written) "
          "before it computes the op; refengine after, so a program that meets another error "
          "there too (shapes that do not broadcast, a view that needs a copy) gets that one. Not "
          "fixed: refengine would need to know, before computing, which inputs the op saves"),
    *(Entry(kind, ".*", lambda found, source: "create_graph" in source
            and "Trying to backward through the graph a second time" in found.refengine,
            "a double backward through an in-place op on a view (x.t().exp_()): refengine "
            "gives the op's saved result the in-place node (ExpBackward0) as grad_fn, torch "
            "the view's regenerated grad_fn through CopySlices; refengine's second backward "
            "then fails. Found by the last run of issue 33, not fixed yet: the saved result "
            "must follow the view's grad_fn at unpack")
      for kind in ("raises", "hooks")),
    Entry("crash", ".*", lambda found, source: True,
          "torch 2.13 crashes (segmentation fault) in register_hook on a view, made in "
          "inference or no_grad mode, whose base was written in place (and at times "
          "elsewhere): torch's bug, nothing in refengine to fix"),
)


def classify(found, source: str = "") -> str:
    """'known', 'open' or 'new' for a difference found in the program ``source``."""
    if any(e.matches(found, source) for e in KNOWN + SINGULAR):
        return "known"
    if any(e.matches(found, source) for e in OPEN):
        return "open"
    return "new"
