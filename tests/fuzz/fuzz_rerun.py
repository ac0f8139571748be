"""Second runs of a fuzzed program: the differences known because they go away
when one kind of statement is rewritten so that both engines do the same thing
there (``RERUNS``; fuzz_known classifies with them), and the two checks that
run the program again as it is (hooks called in another order; a result that
cancels to 0). Each names its reason in docs/differences.md.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from fuzz_compare import arrays_of, elements_that_differ, same
from fuzz_engine import observe


@dataclass(frozen=True)
class Rerun:
    """A class of differences known by a second run: the program with each
    statement of the template ``stmt_kind`` rewritten (by ``rewrite``, on its
    code) so that both engines do the same thing there. The difference is of
    this class when the rewritten program no longer shows it (nor any
    difference outside the lists)."""

    stmt_kind: str
    rewrite: Callable[[str], str]
    kinds: tuple
    why: str
    when: Callable[[object], bool] = lambda found: True     # a test of the difference first
    modes: tuple = ("backward", "double", "forward")        # the programs it applies to


def _conj_copy(code: str) -> str:
    target, _, call = code.partition(" = ")
    x = call[: -len(".conj()")]
    return f"{target} = E.conj_physical({x}) if {x}.is_complex() else {x}.conj()"


def _operand_a_clone(code: str) -> str:
    return re.sub(r"\.(\w+_)\((v\d+)\)$", r".\1(\2.clone())", code)


def _signed_zero_normalised(code: str) -> str:
    # + 0 makes every zero (of a real or an imaginary part) +0, in both engines
    return f"{code} + 0" if " = " in code else f"{code}.add_(0)"


def _explicit_power(code: str) -> str:
    """x ** y as exp(y log x) written out, in complex, when either is complex."""
    m = re.fullmatch(r"(v\d+) = (?:E\.pow\((v\d+), (v\d+)\)|(2\.0) \*\* (v\d+))", code)
    if m is None:
        return code
    target, base, exp = m.group(1), m.group(2) or m.group(4), m.group(3) or m.group(5)
    cplx = f"{exp}.is_complex()" + (f" or {base}.is_complex()" if base != "2.0" else "")
    # log of the number 2.0 as a number (torch's log takes tensors only)
    log = f"E.log({base} + 0j)" if base != "2.0" else f"{math.log(2.0)!r}"
    return f"{target} = E.exp({exp} * {log}) if {cplx} else {code.partition(' = ')[2]}"


def _acosh_written_out(code: str) -> str:
    """acosh of a complex tensor as log(z + sqrt(z - 1) sqrt(z + 1)), its principal
    branch: both engines then differentiate the same composition. z + 0 first:
    every zero imaginary part +0, so that both take the same side of the cuts
    (their sqrt and complex products give zeros of either sign)."""
    target, _, call = code.partition(" = ")
    z = call[len("E.acosh("):-1]
    return (f"{target} = E.log(({z} + 0) + E.sqrt(({z} + 0) - 1) * E.sqrt(({z} + 0) + 1)) "
            f"if {z}.is_complex() else {call}")


def _grad_fn_read_first(code: str) -> str:
    """An in-place op on ``v`` with ``v.grad_fn`` read just before it."""
    return f"{code.split('.', 1)[0]}.grad_fn; {code}"


_INPLACE_WITH_OPERAND = ("{a}.copy_({b})", "{a}.mul_({b})", "{a}.add_({b})", "{a}.div_({b})")


def _exact_self_division(code: str) -> str:
    """x / x (x.div_(x)) made exactly 1 (or NaN) in both engines, with its graph kept:
    times 0 plus 1 (x / x is 1 plus a rounding error in torch's complex kernel)."""
    m = re.fullmatch(r"(v\d+) = (v\d+) / \2", code)
    if m:
        return f"{code} * 0 + 1"
    m = re.fullmatch(r"(v\d+)\.div_\(\1\)", code)
    return f"{code}.mul_(0).add_(1)" if m else code


def _operands_snapped(code: str) -> str:
    """Each operand ``v`` of the op read as ``snap(v)`` (fuzz_engine.snap): on a
    grid of 2**-40, zeros +0, graph and tangent kept."""
    target, _, call = code.partition(" = ")
    return f"{target} = " + re.sub(r"\b(v\d+)\b", r"snap(\1)", call) if call else code


# ops with a branch cut, a pole, a jump or a kink, where two inputs equal to rounding
# (1e-17 against -1e-17, +0 against -0, two maxima a last bit apart) give
# results (or derivatives) that differ
_DISCONTINUOUS = ("E.atanh({a})", "E.acosh({a})", "E.asinh({a})", "E.log({a})",
                  "E.log1p({a})", "E.sqrt({a})", "E.rsqrt({a})", "{a} ** 0.5", "E.sgn({a})",
                  "E.sign({a})", "E.angle({a})", "E.atan2({a}, {b})",
                  "E.where({a}.real > 0, {a}, {b})", "E.pow({a}, {b})", "2.0 ** {a}",
                  "E.maximum({a}, {b})", "E.minimum({a}, {b})", "E.xlogy({a}, {b})",
                  "{a}.max()", "{a}.amax(0)", "E.abs({a})", "E.relu({a})", "{a}.norm()",
                  "E.clamp({a}, min=-0.5, max=0.5)", "E.reciprocal({a})", "{a} ** -1.0",
                  "{a} / {b}")


def _abs_loss_snapped(code: str) -> str:
    """A complex program's loss ``|v|.sum()`` with ``v`` snapped (``_operands_snapped``):
    abs has its kink at 0, and a root that is 0 by cancellation (log z - 1 / (1 / log z))
    is a residue of 1e-17 whose direction, a last bit of each engine's complex
    division, picks abs's gradient. A real loss (a plain sum) has no kink: unchanged."""
    target, _, call = code.partition(" = ")
    return _operands_snapped(code) if call.startswith("E.abs(") else code


def _grads_cloned(code: str) -> str:
    """A first backward (retain_graph=True) followed by every .grad replaced by a
    clone of itself: no two .grad share memory before the next backward."""
    if not code.endswith("retain_graph=True)"):
        return code
    return (f"{code}; [setattr(t, 'grad', t.grad.clone()) for t in list(globals().values()) "
            f"if hasattr(t, 'retain_grad') and t.grad is not None]")


def _no_hook(code: str) -> str:
    return "None"


RERUNS = (
    Rerun("{a}.conj()", _conj_copy, ("value", "version", "flags", "raises", "tangent", "grad",
                                     "hooks"),
          "docs/differences.md: conj() is a copy, not a lazily conjugated view: gone when "
          "each complex conj() is a copy in both engines (conj_physical)"),
    *(Rerun(template, _operand_a_clone, ("value", "tangent"),
            "docs/differences.md: an in-place op whose operand overlaps the destination in "
            "part (copy_, mul_, ...): gone when the operand is a clone")
      for template in _INPLACE_WITH_OPERAND),
    Rerun("{a}.retain_grad()", _grad_fn_read_first, ("grad", "raises"),
          "docs/differences.md: torch's retain_grad() on a view whose base was written since "
          "reads a stale grad_fn and retains nothing unless grad_fn was read before (nor "
          "raises for a no_grad view): gone when the program reads it just before",
          when=lambda found: "'grad': None" in found.torch or (
              found.kind == "raises" and "A view was created in" in found.refengine)),
    *(Rerun(template, _grad_fn_read_first, ("raises",),
            "docs/differences.md: torch's in-place op on a view whose base was written "
            "since reads a stale grad_fn (none: 'a leaf Variable') unless grad_fn was read "
            "before: gone when the program reads it just before the op",
            when=lambda found: "a leaf Variable that requires grad is being used in an "
                               "in-place operation." in found.torch)
      for template in _INPLACE_WITH_OPERAND + ("{a}.sub_(1.5)", "{a}.mul_(2)", "{a}.exp_()",
                                               "{a}.sin_()", "{a}.tanh_()", "{a}.zero_()",
                                               "{a}.neg_()", "{a}.pow_(2)", "{a}.sqrt_()",
                                               "{a}.clamp_(min=0.0)", "{a}.abs_()")),
    Rerun("backward", _grads_cloned, ("grad",),
          "docs/differences.md: torch's first backward can leave two leaves' .grad sharing "
          "memory (a real leaf's the real part of a complex one's), and the next backward "
          "accumulates into both: gone when each .grad is cloned between the two"),
    Rerun("register_hook", _no_hook, ("hooks",),
          "docs/differences.md: in a double backward a hook on an intermediate tensor gets "
          "the share of the gradient that the backward formulas route through it, which "
          "differs where refengine's formulas read other tensors than torch's: known only "
          "when, without the hooks, every gradient agrees", modes=("double",)),
    *(Rerun(template, _signed_zero_normalised, ("value", "tangent", "grad", "hooks"),
            "docs/differences.md: torch's neg (and complex mul) gives -0 or +0 (a part of a "
            "complex number) by position in its vectorised loop, and its complex add and sub "
            "+0 where IEEE gives -0, which a branch cut after them turns into another value: "
            "gone when their zeros are all +0 in both engines")
      for template in ("E.neg({a})", "{a}.neg_()", "{a} * {b}", "{a} + {b}", "{a} - {b}",
                       "{a}.add_({b})", "{a}.sub_(1.5)")),
    *(Rerun(template, _exact_self_division, ("value", "tangent", "grad", "hooks"),
            "docs/differences.md: a complex tensor divided by itself is exactly 1 in refengine, "
            "1 plus a rounding error in torch's vectorised kernel: gone when both give 1")
      for template in ("{a} / {b}", "{a}.div_({b})")),
    Rerun("E.acosh({a})", _acosh_written_out, ("tangent", "grad", "hooks"),
          "docs/differences.md: acosh's derivative for complex z is 1/(sqrt(z-1) sqrt(z+1)) "
          "in refengine; torch's (z^2-1)^(-1/2) has the wrong sign where Re z < 0: gone when "
          "both differentiate acosh written out as log(z + sqrt(z-1) sqrt(z+1))"),
    *(Rerun(template, _explicit_power, ("value", "tangent", "grad", "hooks"),
            "docs/differences.md: a complex power is NumPy's cpow in refengine, exp(y log x) "
            "in torch: gone when both compute exp(y log x)")
      for template in ("E.pow({a}, {b})", "2.0 ** {a}")),
)


RERUNS += tuple(
    Rerun(template, _operands_snapped, ("value", "tangent", "grad", "hooks"),
          "docs/differences.md: inputs equal to rounding on either side of a branch cut or "
          "a jump (a complex x / |x| whose imaginary part is 1e-17 or -1e-17): gone when "
          "the op's operands are put on one grid in both engines")
    for template in _DISCONTINUOUS) + (
    Rerun("loss", _abs_loss_snapped, ("value", "tangent", "grad", "hooks"),
          "docs/differences.md: a complex program's loss |v|.sum() where v is 0 by "
          "cancellation: its rounding residue (1e-17, in a direction set by the last bit of "
          "each engine's complex division) picks abs's gradient at its kink: gone when v is "
          "put on one grid in both engines"),)


def rewritten(program, rerun: Rerun):
    """``program`` with ``rerun``'s statements rewritten."""
    stmts = tuple(replace(st, code=rerun.rewrite(st.code)) if st.kind == rerun.stmt_kind
                  else st for st in program.stmts)
    return replace(program, stmts=stmts)


HOOK_ORDER = ("docs/differences.md: a double backward calls the hooks of several tensors in "
              "another order (its graph is made of refengine's backward formulas); run again, "
              "each hook gets the same gradients in both engines")


def hooks_in_another_order(found, program, engines) -> bool:
    """A double backward whose hook calls, run again on both engines, are the
    same calls (hook and gradient) in another order within each statement."""
    if found.kind != "hooks" or program is None or engines is None or program.mode != "double":
        return False

    def calls(E):
        seen = {}
        for label, _, obs in observe(program, E):
            if " hook " in label:
                step, k = label.split(" hook ")
                seen.setdefault((step, int(k)), []).append(obs[1])
        return seen
    ref, tor = (calls(E) for E in engines)
    return ref.keys() == tor.keys() and all(
        len(ref[k]) == len(tor[k]) and all(same(a, b) for a, b in zip(ref[k], tor[k]))
        for k in ref)


CANCELLED = ("docs/differences.md: a result that is 0 by cancellation (2x / x - 2 and its "
             "derivatives) is 0 in one engine and rounding in the other: known only where one "
             "side is exactly 0 and the other below 2**-40 times the largest value the program "
             "shows")


def _largest_observed(program, E) -> float:
    """The largest finite magnitude among what ``program`` shows on ``E``: its
    values, tangents, gradients and hooks' gradients."""
    arrays = []

    def walk(obs):
        if obs[0] == "tensor":
            arrays.extend(obs[1].get(k) for k in ("value", "tangent", "grad"))
        elif obs[0] == "hook":
            arrays.append(obs[1])
        elif obs[0] == "seq":
            for x in obs[1]:
                walk(x)
    for _, _, obs in observe(program, E):
        walk(obs)
    with np.errstate(all="ignore"):
        return max((float(np.max(np.abs(a[np.isfinite(a)]), initial=0.0)) for a in arrays
                    if isinstance(a, np.ndarray) and a.dtype.kind in "fc"), default=0.0)


def cancelled_to_zero(found, program, engines) -> bool:
    """At every element that differs one engine has exactly 0 and the other a
    number below 2**-40 times the largest value the program shows (on torch):
    a sum that cancels to 0 keeps an absolute rounding error of a few ulps of
    its terms, which the program's values bound; 2**-40 is 4096 ulps of them."""
    if found.kind not in ("value", "grad", "tangent", "hooks") or program is None \
            or engines is None:
        return False
    ref, tor = arrays_of(found)
    if ref is None:
        return False
    off = elements_that_differ(ref, tor)
    r, t = ref[off], tor[off]
    if not off.any() or not ((r == 0) | (t == 0)).all():
        return False
    with np.errstate(all="ignore"):
        residue = np.maximum(np.abs(r), np.abs(t))
    return bool((residue <= 2.0 ** -40 * _largest_observed(program, engines[1])).all())
