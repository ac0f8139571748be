"""The mpmath arbiter of a failing explored point.

Finite differences see only what the forward computes. Where the forward
loses its low bits to cancellation (gelu at x = -7.85 computes 1 + erf =
4e-15 in steps of 1.1e-16), every step the judge takes sees a quantized
function, and the difference quotients are no derivative: a correct formula
fails there. No rule on the quotients alone tells that from a wrong formula
(widening the steps until the forward moves would let a 1 % error of a smooth
formula pass), but the op's mpmath reference can: it is the function itself,
computed at 60 digits (``numerics.reference``, the reference check's producer).

So when the check carries a reference (``Options.explore_reference``: the
runner gives it for ops that declare ``mpmath_ref``), a point that still fails
after the one-sided verdicts is judged once more, against the reference's
Jacobian, by the one comparator (``compare_pair``):

- the point is "the forward loses precision" (counted apart, not a failure)
  only when finite differences disagree with the reference *and* every block
  of the formula agrees with it, within ``RTOL`` of each entry;
- otherwise it stays a failure, and its report says what mpmath found (the
  formula's and the quotients' distance from it).

The arbiter can only clear a point that finite differences got wrong by
mpmath's own evidence; a wrong formula disagrees with mpmath too, and a formula
that is right where the quotients are also right was never failed by them.
It is consulted only at a point that would fail (rare), and only for a
first-order check whose formula is finite there (NaN agrees with nothing).
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.numerics.reference import reference_blocks
from adcheck.gradcheck.verdict.compare import compare_pair

#: how far the formula may be from the reference (of each entry) and still agree.
#: A formula computed in float64 rounds its own intermediates: gelu's Phi = (1 +
#: erf) / 2 is 1.7e-4 of the derivative off at -7.85 (6e-4 at -8), while the explore
#: judge promises that an entry 1 % off fails; a tenth of that keeps the promise
RTOL = 1e-3


def _dense(jac, reference) -> bool:
    """Whether ``jac`` holds whole blocks of the reference's shapes (a compressed
    or probed Jacobian holds products ``J S``, not comparable entry by entry)."""
    if jac is None or getattr(jac, "seeds", None) is not None:
        return False
    return all(key in jac.blocks and np.shape(jac.blocks[key]) == np.shape(block)
               for key, block in reference.blocks.items())


def _distance(reference, jac, mode: str) -> tuple[bool, float]:
    """Whether every block of ``jac`` agrees with ``reference`` within ``RTOL``,
    and its largest error relative to the reference's largest entry."""
    agree, worst = True, 0.0
    for key in sorted(reference.blocks):
        found = compare_pair(mode, reference, jac, *key, 0.0, RTOL, explain=False)
        agree = agree and found.passed
        scale = float(np.max(np.abs(reference.blocks[key]), initial=0.0))
        error = found.max_error if found.max_error is not None else 0.0
        worst = max(worst, error / scale if scale > 0 else float("inf") if error else 0.0)
    return agree, worst


def arbitrate(ev, jacobians: dict, numerical, ref) -> tuple[str, str]:
    """``(verdict, note)`` at a failing point: verdict ``"cancels"`` when the
    formula (``jacobians``, by mode) agrees with the mpmath reference ``ref``
    and the finite differences ``numerical`` do not, else ``"fail"``; ``note``
    says what the reference found (empty when it was not consulted). ``ev``:
    the evaluator of the checked function at the point (its layout, inputs)."""
    if not jacobians or any(not np.all(np.isfinite(block)) for jac in jacobians.values()
                            for block in jac.blocks.values()):
        return "fail", ""
    try:
        reference = reference_blocks(ev, ref)
    except Exception as exc:  # noqa: BLE001 - the reference fails here: no evidence
        return "fail", f"the mpmath reference could not arbitrate ({type(exc).__name__})"
    if not all(_dense(jac, reference) for jac in jacobians.values()) \
            or not _dense(numerical, reference):
        return "fail", ""
    formula = {mode: _distance(reference, jac, mode) for mode, jac in jacobians.items()}
    quotients_agree, quotients_off = _distance(reference, numerical, "numerical")
    formula_off = max(off for _, off in formula.values())
    if all(agree for agree, _ in formula.values()) and not quotients_agree:
        return "cancels", ""
    return "fail", (f"the mpmath reference: the formula is {formula_off:.1e} off it, finite "
                    f"differences {quotients_off:.1e} (of the largest entry)")
