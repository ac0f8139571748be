"""A failure at an input coordinate smaller than the differences' steps, said so.

Finite differences step by ``eps`` (1e-6) and more, whatever the inputs'
size. At a coordinate of 1e-8 they see the function a hundred times farther
out than the point itself, where rotation code switches from its
small-angle series to the closed form (roma at 1e-6), or where a forward
that cancels (``(1 - cos t) / t**2``) is all rounding: the check then fails
a formula that is the local derivative of what the forward computes, with
words for a formula bug ("wrong axis", "a kink or a tie"). Where a
first-order failure's worst entry lies along such a coordinate, central
differences with steps below the coordinate are taken at that entry, and
the failure says what they show: that they agree with the AD value and not
with the check's differences, that their rounding is too coarse to settle
it, or that they give the check's value again (the forward's own slope so
near the point, which a forward that drops a term of its series has). The verdict stays a failure: at such inputs the check cannot tell
a formula bug, and an mpmath reference or larger inputs can.
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.verdict.kinkpoint import looked_at, value_at

#: a coordinate is small when it is below this: the least step of differences
#: at the default eps (and of the precise scheme's), so every one steps past it
SMALL = 1e-6
#: the steps taken, relative to the coordinate: both below it
FRACTIONS = (1e-1, 1e-2)
#: the rounding of a central quotient, in units of double precision's epsilon
#: times the output's largest value, over the step
ROUNDING_UNITS = 4.0


def name_small_inputs(ev, results: list) -> list:
    """``results``, each failing first-order comparison with finite differences
    whose worst entry is along a coordinate below ``SMALL`` given the words of
    differences at steps below it: in place of its diagnosis where they side
    with the AD value (the diagnosis blamed the formula), after it otherwise."""
    for result in looked_at(ev, results):
        found = _below(ev, result)
        if found is None:
            continue
        full, short, replace = found
        result.diagnosis = full if replace or not result.diagnosis else \
            f"{result.diagnosis}; {short}"
    return results


def _below(ev, result) -> tuple | None:
    """``(full words, short words, whether they replace the diagnosis)``, or None."""
    p = ev.problem
    o, i, (r, c) = result.out_idx, result.in_idx, result.where
    base, out = p.arrays.get(i), p.out_arrays.get(o)
    if base is None or out is None or np.iscomplexobj(base) or np.iscomplexobj(out) \
            or c >= base.size or r >= out.size or result.actual is None \
            or result.expected is None:
        return None
    x = float(base.reshape(-1)[c])
    actual, expected = np.asarray(result.actual), np.asarray(result.expected)
    if not 0 < abs(x) < SMALL or actual.ndim != 2 or r >= actual.shape[0] \
            or c >= actual.shape[1]:
        return None
    try:
        quotients, rounding = _quotients(ev, i, base, c, x, o, r, out)
    except Exception:  # noqa: BLE001 - a step out of the domain says nothing here
        return None
    ad, check = float(actual[r, c]), float(expected[r, c])
    tol = max(float(np.max(result.tolerance)) if result.tolerance is not None else 0.0,
              rounding)
    gap = abs(ad - check)
    where = (f"input {i} coordinate {c} is {x:.1e}, smaller than the differences' steps "
             f"(eps and up)")
    below = (f"at steps below it ({_g(FRACTIONS[0] * abs(x))}, {_g(FRACTIONS[1] * abs(x))}) "
             f"central differences of output {o} coordinate {r} give {_g(quotients[0])} and "
             f"{_g(quotients[1])}")
    if rounding < gap / 2 and all(np.isfinite(q) and abs(q - check) <= max(
            tol, 1e-3 * abs(check)) for q in quotients):
        return _repeated(where, below, result.mode, ad)
    if not all(np.isfinite(q) and abs(q - ad) <= tol for q in quotients):
        return None
    said = (f"{where}, so they measure the function farther out than the point (where a "
            f"small-argument series may switch to a closed form, or the forward cancel); "
            f"{below} (their rounding up to {rounding:.1e}), ")
    if rounding < gap / 2:
        return (said + f"as the {result.mode} side's {_g(ad)} does and the check's {_g(check)} "
                "does not: judge it at larger inputs, or with an mpmath reference", "", True)
    coarse = (f"too coarse to settle a difference of {gap:.1e}: whether the formula is wrong "
              "here or the check's differences measured the function past a change of form, "
              "differences cannot tell at inputs this small; judge it at larger inputs, or "
              "with an mpmath reference")
    return (said + f"which agrees with the {result.mode} side's {_g(ad)} but is {coarse}",
            f"{where}; {below}, {coarse}", False)


def _quotients(ev, i, base, c, x, o, r, out) -> tuple:
    """Central quotients at steps ``FRACTIONS`` of ``|x|``, and their rounding."""
    scale = float(np.max(np.abs(out))) if out.size else 0.0
    quotients, rounding = [], 0.0
    for fraction in FRACTIONS:
        h = fraction * abs(x)
        ends = [value_at(ev, i, base, c, x + sign * h, o, r, "differencing below a small input")
                for sign in (1.0, -1.0)]
        quotients.append((ends[0] - ends[1]) / (2 * h))
        rounding = max(rounding, ROUNDING_UNITS * ev.problem.epsilon(out_idx=o) * scale / h)
    return quotients, rounding


def _repeated(where: str, below: str, mode: str, ad: float) -> tuple:
    """The words where differences below the coordinate give the check's value again."""
    slope = "that is the slope of the function as computed there"
    return (f"{where}, yet {below} too: {slope}, and the {mode} side's {_g(ad)} is not; "
            "either the formula is wrong at inputs this small, or the forward computes "
            "another function there than the one the formula differentiates (a "
            "small-argument series that drops a term, a cancellation); an mpmath reference "
            "of the function meant tells which",
            f"{where}, yet {below} too: {slope}", False)


def _g(value: float) -> str:
    return f"{value + 0.0:.6g}"
