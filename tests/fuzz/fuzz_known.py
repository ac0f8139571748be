"""Differences the fuzzer reports but that are not findings.

``KNOWN`` (and ``SINGULAR``, the NaN and inf patterns at singular points)
are deliberate: each names its entry in docs/differences.md. ``OPEN`` are
real differences not fixed, each saying why: none of them is a difference
in a value, a gradient or whether an error is raised. A difference matches an
entry when its kind is the entry's kind, its statement template matches the
entry's pattern, and the entry's test accepts it (given the program's text).
The second runs of ``fuzz_rerun`` (``RERUNS``, the hook-order and the
cancellation checks) need the program and the engines (``classify``'s last
arguments).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

import numpy as np

from fuzz_compare import arrays_of as _arrays, elements_that_differ as _elements_that_differ
from fuzz_rerun import RERUNS, cancelled_to_zero, hooks_in_another_order, rewritten
from fuzz_rounding import torch_moves_as_much


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


def _hook_on_a_product_twice(found, source: str) -> bool:
    """A double backward, and the hook that differs (or the retained grad) is on the
    result of prod or cumprod."""
    if found.kind == "grad":
        name = re.fullmatch(r"end (v\d+)", found.label)
        watched = name and re.search(rf"^{name.group(1)}\.retain_grad\(\)", source, re.M) \
            and name.group(1)
    else:
        k = re.search(r"hook (\d+)", found.label + " " + found.torch + " " + found.refengine)
        hooked = k and re.search(rf"\b(v\d+)\.register_hook\(hook\({k.group(1)},", source)
        watched = hooked and hooked.group(1)
    return bool(watched and "create_graph" in source and re.search(
        rf"^{watched} = (E\.cumprod\(|v\d+\.prod\()", source, re.M))


def _sign_of_imaginary(found, source: str) -> bool:
    """The two differ only in the sign of some imaginary parts."""
    ref, tor = _arrays(found)
    if ref is None or not np.iscomplexobj(ref):
        return False
    with np.errstate(all="ignore"):
        return bool(np.allclose(ref.real, tor.real, equal_nan=True)
                    and np.allclose(np.abs(ref.imag), np.abs(tor.imag), equal_nan=True))


def _angle_sign_of_pi(found, source: str) -> bool:
    """The two differ only where one has pi and the other -pi (the angle, or the
    imaginary part of a complex log, whose real parts agree)."""
    ref, tor = _arrays(found)
    if ref is None:
        return False
    off = _elements_that_differ(ref, tor)
    if not off.any():
        return False
    r, t = ref[off], tor[off]
    with np.errstate(all="ignore"):
        if np.iscomplexobj(r):
            if not np.allclose(r.real, t.real, rtol=1e-9, atol=1e-12):
                return False
            r, t = r.imag, t.imag
        return bool(np.allclose(np.abs(r), np.pi) and np.allclose(r, -t))


def _a_few_ulps_of_the_input(found, source: str) -> bool:
    """atanh or acosh whose input the engines computed a few ulps apart (their tanh
    or exp): at every element that differs, both finite, the gap is within what 16
    ulps of the input x make of the result (``|x f'(x)|``: atanh's ``|sinh 2y| / 2``,
    acosh's ``|coth y|``, y the result) or of the tangent ``x_t f'(x)`` (relative
    ``1 + |x f''(x) / f'(x)|``: ``2|x^2 / (1 - x^2)|`` and ``|x^2 / (x^2 - 1)|``).
    Moving the program's leaves does not show it (tanh near 1 absorbs their moves)."""
    ref, tor = _arrays(found)
    obs = found.raw[1]
    y = obs[1].get("value") if obs and obs[0] == "tensor" else None
    if ref is None or not isinstance(y, np.ndarray) or y.shape != tor.shape:
        return False
    off = _elements_that_differ(ref, tor)
    acosh = "acosh" in found.stmt
    with np.errstate(all="ignore"):
        if not (off.any() and np.isfinite(ref[off]).all() and np.isfinite(tor[off]).all()):
            return False
        y = y[off]
        if found.kind == "value":
            bound = np.abs(1 / np.tanh(y)) if acosh else np.abs(np.sinh(2 * y)) / 2
        else:
            x2 = np.cosh(y) ** 2 if acosh else np.tanh(y) ** 2
            q = np.abs(x2 / (x2 - 1))
            bound = np.abs(tor[off]) * (1 + (q if acosh else 2 * q))
        return bool((np.abs(ref[off] - tor[off]) <= 16 * 2.0 ** -52 * bound).all())


def _torch_hook_gets_zeros(found, source: str) -> bool:
    """torch called a hook with an all-zero gradient where refengine did not call it."""
    ref, tor = found.raw
    if tor is None:     # a difference at the end: read the texts
        return (re.fullmatch(r"s\d+ hook \d+: \('hook', array\([-0.,\s\[\]]*\)\)", found.torch)
                is not None and "hook" not in found.refengine)
    return (tor[0] == "hook" and isinstance(tor[1], np.ndarray)
            and not np.any(tor[1]) and (ref is None or ref[0] != "hook"))


def _where_differ(found, ref_pred, tor_pred) -> bool:
    """At every element where the two differ, ``ref_pred`` holds of refengine's
    number and ``tor_pred`` of torch's (and they differ somewhere)."""
    ref, tor = _arrays(found)
    if ref is None:
        return False
    off = _elements_that_differ(ref, tor)
    with np.errstate(all="ignore"):
        return bool(off.any() and ref_pred(ref[off]).all() and tor_pred(tor[off]).all())


def _not_finite(a):
    return ~np.isfinite(a)


def _anything(a):
    return np.ones(np.shape(a), dtype=bool)


def _sgn_zero_tensor(found, source: str) -> bool:
    """torch has a number (0, or what the zero is added to) where refengine has NaN
    or inf, in a program with sgn (or abs in a double backward, whose backward is
    grad * sgn(x)): torch's ZeroTensor gradient (or tangent) of sgn stays zero
    through a NaN or inf factor, refengine's ordinary zeros do not. What the zero
    is added to may itself be inf (``v / sgn(v ** v)`` at v = -1.405: torch inf,
    refengine NaN), so torch may be non-finite too where refengine is."""
    # abs's backward is grad * sgn(x): its gradient in a double backward is sgn's
    sgn = "E.sgn(" in source or ("create_graph" in source and re.search(
        r"E\.abs\(|\.abs_\(\)", source) is not None)
    return sgn and _where_differ(found, _not_finite, _anything)


def _large_value_rounding(found, source: str) -> bool:
    """The two agree to 1e-8 relative where they differ, at values of 1e6 and more:
    an ill-conditioned result (exp, sin, a power of an input) magnifying a last-bit
    difference; a single-precision constant in a formula is 3e-8 and more."""
    ref, tor = _arrays(found)
    if ref is None:
        return False
    off = _elements_that_differ(ref, tor)
    with np.errstate(all="ignore"):
        return bool(off.any() and (np.abs(tor[off]) >= 1e6).all()
                    and np.allclose(ref[off], tor[off], rtol=1e-8, atol=0))


def _masked_after_computing_twice(found, source: str) -> bool:
    """torch has NaN where refengine has a number, in a double backward through a
    power, a norm or a complex angle: torch masks log(0) (d/dp x**p at x = 0),
    grad / norm (at norm 0) and grad * z / |z|**2 (angle at z = 0) after computing
    them, and the second derivative meets 0 * inf; refengine keeps them out of
    the graph."""
    return (("E.pow(" in source or " ** " in source or ".norm()" in source
             or "E.angle(" in source)
            and "create_graph" in source
            and _where_differ(found, lambda r: ~np.isnan(r), np.isnan))


def _products_of_the_others(found, source: str) -> bool:
    """One side has a number where the other has NaN or inf, in a program with
    cumprod or prod: torch's formulas are result / input without a zero in the
    input (NaN everywhere once an element is NaN or inf) and skip the factors
    after a zero; refengine's are the products of the other elements (finite
    where those are, 0 * NaN where a zero meets a NaN). At every element that
    differs one side at least is not finite (a gradient can have both kinds:
    refengine's number beside torch's NaN, refengine's inf beside torch's NaN);
    two numbers that differ are a finding."""
    if "E.cumprod(" not in source and ".prod(" not in source:
        return False
    ref, tor = _arrays(found)
    if ref is None:
        return False
    off = _elements_that_differ(ref, tor)
    return bool(off.any() and (_not_finite(ref[off]) | _not_finite(tor[off])).all())


def _complex_zero_to_the_zero(found, source: str) -> bool:
    """A complex power where, at every element that differs, refengine has
    exactly 1 (0 ** 0, NumPy's cpow) and torch NaN (exp(0 * log 0)), or both
    are not finite (0 ** -0.5: nan + nanj against inf + nanj)."""
    ref, tor = _arrays(found)
    if ref is None or not np.iscomplexobj(tor):
        return False
    off = _elements_that_differ(ref, tor)
    with np.errstate(all="ignore"):
        one_nan = (ref[off] == 1) & np.isnan(tor[off])
        both = _not_finite(ref[off]) & _not_finite(tor[off])
    return bool(off.any() and one_nan.any() and (one_nan | both).all())


def _torch_real_tangent_of_copy(found, source: str) -> bool:
    """copy_ of a real dual tensor into a complex one without a tangent: torch's
    tangent is the source's, real; refengine's the tensor's dtype, with the
    same real part and no imaginary part."""
    ref, tor = (obs[1].get("tangent") if obs and obs[0] == "tensor" else None
                for obs in found.raw)
    return (isinstance(ref, np.ndarray) and isinstance(tor, np.ndarray)
            and np.iscomplexobj(ref) and not np.iscomplexobj(tor) and ref.shape == tor.shape
            and not np.any(ref.imag) and np.allclose(ref.real, tor, equal_nan=True))


def _torch_is_leaf_assert(found, source: str) -> bool:
    """torch's is_leaf raised (an internal assert) on a view_as_real view (or
    .real, .imag: its select views) of a base that detach_() cut, or that was made
    to require grad in place while its root does not (make_dual's result is a view
    of its primal), and an in-place op then wrote."""
    ref, tor = (obs[1].get("flags") if obs and obs[0] == "tensor" else None
                for obs in found.raw)
    return (tor is not None and ref is not None and tor[3] == ("raises", "RuntimeError")
            and ref[3] != tor[3]
            and re.search(r"view_as_real\(|\.real\b|\.imag\b", source) is not None
            and (".detach_()" in source or ".requires_grad_()" in source))


def _torch_new_fn_assert(found, source: str) -> bool:
    """torch raised its internal assert "new_fn" (regenerating the history of a
    view_as_real view, or of .real or .imag, which are its select views, whose
    base was written in no_grad mode or detached in place) where refengine
    computed."""
    return ("'raises', 'RuntimeError', 'new_fn INTERNAL ASSERT FAILED" in found.torch
            and re.search(r"view_as_real\(|\.real\b|\.imag\b", source) is not None)


def _each(kinds: tuple, test, why: str) -> tuple:
    """One entry per kind of difference, any statement, with one test and reason."""
    return tuple(Entry(kind, ".*", test, why) for kind in kinds)


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
    Entry("tangent", r"pow|\*\*", _torch_drops_imaginary_tangent,
          "docs/differences.md: forward mode through a real input of a complex result "
          "(pow with a complex exponent): torch keeps only the real part of the tangent"),
    Entry("value", r"E\.acosh", _sign_of_imaginary,
          "docs/differences.md: acosh of a real below 1 with a -0 imaginary part is on the "
          "lower side of the cut in refengine (C99's cacosh), the upper in torch"),
    Entry("value", r"E\.angle|E\.log\(|E\.atan2", _angle_sign_of_pi,
          "docs/differences.md: angle (and the imaginary part of log) of a negative real "
          "with a -0 imaginary part is -pi (atan2's); torch's vectorised kernels give +pi "
          "at some positions"),
    *_each(("hooks", "grad"), _hook_on_a_product_twice,
           "docs/differences.md: the backward formulas of prod and cumprod do not read their "
           "result, so in double backward a hook on the result (or its retained grad) gets "
           "nothing, or another share of the gradient (torch's read it)"),
    *(Entry(kind, r"E\.atanh|E\.acosh", _a_few_ulps_of_the_input,
            "docs/differences.md: atanh near 1 and acosh near 1 magnify a last-bit difference "
            "of torch's and NumPy's tanh, exp, ... beyond the fuzzer's 1e-9: known within "
            "what 16 ulps of the input make of the result")
      for kind in ("value", "tangent")),
    Entry("hooks", ".*", _torch_hook_gets_zeros,
          "docs/differences.md: torch calls a hook with zeros through a backward formula "
          "whose derivative is identically zero (a mask read from a tensor) in double "
          "backward; refengine records no such edge (but for relu's, as torch)"),
    *_each(("value", "grad", "tangent", "hooks"), _sgn_zero_tensor,
           "docs/differences.md: torch's zero gradients and tangents of sgn are ZeroTensors, "
           "which stay zero through a NaN or inf factor; refengine's zeros give NaN"),
    *_each(("value", "grad", "tangent", "hooks"), _large_value_rounding,
           "docs/differences.md: ill-conditioned functions round otherwise: agreement to "
           "1e-8 relative at values of 1e6 and more"),
    *_each(("value", "grad", "hooks"), _masked_after_computing_twice,
           "docs/differences.md: a double backward through pow at a zero base, norm at 0 or "
           "a complex angle at 0: torch NaN (0 * log 0, 0 * (grad / 0)), refengine the "
           "number (kept out of the graph)"),
    *_each(("value", "grad", "tangent", "hooks"), _products_of_the_others,
           "docs/differences.md: cumprod and prod with a zero, NaN or inf element: torch's "
           "result / input and its zero path against refengine's products of the others"),
    Entry("value", r"E\.pow\(|\*\* \{", _complex_zero_to_the_zero,
          "docs/differences.md: a complex 0 ** 0 is 1 in refengine (NumPy's cpow), NaN in "
          "torch (exp(0 * log 0)); beside it, which non-finite value 0 ** y has for y < 0"),
    Entry("raises", r"2\.0 \*\* ", lambda found, source: "inference_mode" in source
          and "functions with out=... arguments don't support automatic differentiation"
          in found.torch,
          "docs/differences.md: a number to the power of an inference tensor that requires "
          "grad: torch raises about out= arguments (its Scalar-base pow calls its out= "
          "kernel), refengine computes it unrecorded as any op on inference tensors"),
    Entry("raises", r"norm|logsumexp",
          lambda found, source: "_is_zerotensor() INTERNAL ASSERT" in found.torch,
          "docs/differences.md: torch fails an internal assert in norm's and logsumexp's "
          "tangents when the tangent is sgn's ZeroTensor; refengine's zero tangent gives 0"),
    Entry("tangent", r"copy_", _torch_real_tangent_of_copy,
          "docs/differences.md: copy_ of a real dual tensor into a complex tensor without a "
          "tangent: torch's tangent is the real one of the source, refengine's complex"),
    Entry("flags", ".*", _torch_is_leaf_assert,
          "docs/differences.md: torch fails an internal assert reading is_leaf of a "
          "view_as_real view whose base was detached in place, or made to require grad "
          "in place while its root does not, and then written"),
    Entry("raises", ".*", _torch_new_fn_assert,
          "docs/differences.md: torch fails the same internal assert (new_fn) using a "
          "view_as_real view (or .real, .imag) whose base was detached in place or "
          "written in no_grad mode"),
)

def _only_which_not_finite(found, source: str) -> bool:
    """Both are not finite wherever they differ: NaN against inf, inf against
    -inf, inf + nanj against inf + 0j (a complex element is not finite when a
    part is not). A number on one side where the other has NaN or inf is not
    this kind: that can be a gradient one engine gets and the other misses."""
    ref, tor = _arrays(found)
    if ref is None:
        return False
    off = _elements_that_differ(ref, tor)
    return bool(off.any() and not (np.isfinite(ref[off]).any() or np.isfinite(tor[off]).any()))


def _tangent_of_a_value_not_finite(found, source: str) -> bool:
    """Tangents differ only at elements whose value is NaN or inf in both engines:
    a derivative where the function itself is not finite."""
    ref, tor = _arrays(found)
    if ref is None or found.kind != "tangent":
        return False
    ref_value, tor_value = (obs[1].get("value") for obs in found.raw)
    if not (isinstance(ref_value, np.ndarray) and isinstance(tor_value, np.ndarray)
            and ref_value.shape == tor_value.shape == ref.shape):
        return False
    off = _elements_that_differ(ref, tor)
    return bool(off.any() and not (np.isfinite(ref_value[off]).any()
                                   or np.isfinite(tor_value[off]).any()))


def _two_errors_in_one_backward(found, source: str) -> bool:
    version, others = "modified by an inplace operation", (
        "A view was created in", "is a view and its base", "has been detached in-place")
    return any(version in a and any(v in b for v in others)
               for a, b in ((found.refengine, found.torch), (found.torch, found.refengine)))


def _version_error_description(found, source: str) -> bool:
    marker = "modified by an inplace operation"
    return marker in found.refengine and marker in found.torch


SINGULAR = tuple(
    Entry(kind, ".*", _only_which_not_finite,
          "docs/differences.md: which non-finite value at a singular point (NaN against inf, "
          "complex arithmetic with a NaN or infinite part, ...), where both are not finite")
    for kind in ("value", "grad", "tangent", "hooks")) + (
    Entry("tangent", ".*", _tangent_of_a_value_not_finite,
          "docs/differences.md: which tangent at a point where the value itself is NaN or "
          "inf (a tangent through cumprod past a NaN, of log at a negative number, ...)"),)

OPEN = (
    Entry("message", ".*", _version_error_description,
          "the saved-tensor version error describes the tensor otherwise: the node of a "
          "regenerated view (torch: AsStrided) or of the op that saved it, and 0-dim complex "
          "tensors (torch: [CPUComplexDoubleType []])"),
    Entry("message", ".*", lambda found, source: "Inference tensors cannot be saved" in found.torch
          or "A view was created in" in found.torch
          or "is the output of a function that returns multiple views" in found.torch,
          "torch checks an op's inputs for autograd (refusing to save inference tensors, reading "
          "the grad_fn of a view made in no_grad or inference mode, or of a multi-output view, "
          "whose base was written) before it computes the op; refengine after, so a program "
          "that meets another error there too (shapes that do not broadcast, a view that needs "
          "a copy, an operand overlapping the written tensor) gets that one. Not "
          "fixed: refengine would need to know, before computing, which inputs the op saves"),
    Entry("message", ".*", _two_errors_in_one_backward,
          "which of two errors a backward meets first (a saved tensor's version error, a "
          "no_grad or inference view's error, a saved tensor detached in place): the order "
          "refengine's engine runs the nodes "
          "in, which is torch's, but for where each engine checks; both raise, the texts "
          "differ"),
    Entry("crash", ".*", lambda found, source: re.search(r"torch alone: exit -\d", found.torch)
          is not None,
          "torch 2.13 crashes (segmentation fault) in register_hook on a view whose base "
          "was written in place since (v1[0], then v1.mul_(2), unless the view's grad_fn "
          "was read in between), and at times elsewhere: the program, or the second run of "
          "it the worker was on (a rerun, leaves moved), crashes torch run alone; torch's "
          "bug, nothing in refengine to fix"),
)


def _gone_when_rewritten(found, program, engines, done: frozenset = frozenset()) -> bool:
    """Some rerun (not among ``done``, those already applied), applied to ``program``,
    makes the difference go away, or leaves one that is known (by another rerun too)."""
    if program is None or engines is None:
        return False
    from fuzz_shrink import difference
    for i, rerun in enumerate(RERUNS):
        if i in done or found.kind not in rerun.kinds or program.mode not in rerun.modes \
                or not rerun.when(found) or not any(st.kind == rerun.stmt_kind
                                                    for st in program.stmts):
            continue
        copied = rewritten(program, rerun)
        if copied == program:
            continue
        again = difference(copied, engines)
        # what is left (at another statement, or another cause at this one: a
        # complex 0 ** 0 beside a branch cut) must be known in its own right
        if again is None or _classify(again, copied.source(), copied, engines,
                                      done | {i}) != "new":
            return True
    return False


def classify(found, source: str = "", program=None, engines=None) -> str:
    """'known', 'open' or 'new' for a difference found in the program ``source``
    (``program`` and ``engines``, when given, let a program be run again: the
    entries of ``RERUNS`` need them)."""
    return _classify(found, source, program, engines, frozenset())


def _classify(found, source: str, program, engines, done: frozenset) -> str:
    if any(e.matches(found, source) for e in KNOWN + SINGULAR):
        return "known"
    if hooks_in_another_order(found, program, engines):
        return "known"
    if cancelled_to_zero(found, program, engines):
        return "known"
    if torch_moves_as_much(found, program, engines):
        return "known"
    if _gone_when_rewritten(found, program, engines, done):
        return "known"
    if any(e.matches(found, source) for e in OPEN):
        return "open"
    return "new"
