"""A failure at given inputs that sit on a kink or a tie, said so.

``relu`` at 0, ``max`` of tied entries, an optimal transport plan at tied
costs: no derivative exists there. Central differences average the two
one-sided derivatives (relu's 0 and 1 give 0.5), the formula returns one of
them or a value between (a subgradient convention: relu'(0) = 0), and the
check fails with words for a formula bug ("analytical is zero: the vjp
returns no gradient"). Where a failure's worst entry has one-sided
difference quotients that stay apart as the step shrinks (a smooth
function's close in proportion to it) and the AD value lies between the
one-sided derivatives (each side's quotients extrapolated to a zero step: a
curved side's are off by O(h)), the failure says the inputs sit where the
function is not differentiable, with both derivatives and the value AD
gave; at second order, where the first derivative is not (its function).
The verdict stays a failure, as torch's gradcheck's: ``--explore`` judges
such points one-sided, given inputs are the user's to move.
"""
from __future__ import annotations

import numpy as np

#: the relative steps of the one-sided quotients, per unit of the coordinate
#: (of at least 1 in magnitude): a kink keeps them apart at both, a smooth
#: function's gap shrinks a hundredfold
STEPS = (1e-4, 1e-6)
#: the checks whose failures are looked at (against differences)
CHECKS = ("reverse", "forward")


def name_kinks(ev, results: list) -> list:
    """``results``, each failing comparison (first or second order) whose worst
    entry sits on a kink or a tie of the function checked given its diagnosis
    saying so."""
    # (at second order the function is the first derivative, whose kinks are the
    # jumps of the second: nflows' spline at its tail bound)
    for result in looked_at(ev, results, orders=(1, 2)):
        found = _one_sided(ev, result)
        if found is not None:
            result.diagnosis = found
    return results


def looked_at(ev, results: list, orders: tuple = (1,)) -> list:
    """The failing comparisons with finite differences among ``results`` whose
    worst entry is one coordinate pair of a whole block, in a check of one of
    ``orders`` (first order only by default)."""
    if ev.problem.order not in orders:
        return []
    return [r for r in results if not r.passed and r.check in CHECKS
            and r.against == "numerical" and r.where is not None and len(r.where) == 2
            and tuple(r.origin or (0, 0)) == (0, 0)]


def value_at(ev, i: int, base: np.ndarray, c: int, value: float, o: int, r: int,
             what: str) -> float:
    """Output ``o``'s coordinate ``r`` with input ``i`` (``base``) at ``value`` in
    coordinate ``c``."""
    moved = base.reshape(-1).copy()
    moved[c] = value
    return float(ev.evaluate({i: moved.reshape(base.shape)}, what)[o].reshape(-1)[r])


def _one_sided(ev, result) -> str | None:
    p = ev.problem
    o, i, (r, c) = result.out_idx, result.in_idx, result.where
    base, out = p.arrays.get(i), p.out_arrays.get(o)
    if base is None or out is None or np.iscomplexobj(base) or np.iscomplexobj(out) \
            or c >= base.size or r >= out.size:
        return None
    if p.epsilon(in_idx=i) > np.finfo(np.float64).eps:
        # (a narrower input cannot be moved by the steps: bfloat16's grid is 2**-8 apart,
        # and the moved value, rounded on its way in, read as changed in place)
        return None
    x = float(base.reshape(-1)[c])
    y = float(out.reshape(-1)[r])
    # (the output's rounding over the step: a formula computing in float32 inside has
    # one-sided quotients apart by its stairs, which is no kink)
    rounding = 4 * p.epsilon(out_idx=o) * max(abs(y), float(np.max(np.abs(out)))) \
        if out.size else 0.0
    quotients = _quotients(ev, result, base, x, y)
    if quotients is None:
        return None
    (wide_l, wide_r), (near_l, near_r) = quotients
    tol = float(np.max(result.tolerance)) if result.tolerance is not None else 0.0
    tol = max(tol, rounding / (STEPS[-1] * max(1.0, abs(x))))
    gap = abs(near_r - near_l)
    actual = None if result.actual is None else np.asarray(result.actual)
    ad = float(actual[r, c]) if actual is not None and actual.ndim == 2 and \
        r < actual.shape[0] and c < actual.shape[1] else None
    # (a jump's quotients grow as the step shrinks: no kink, and said otherwise)
    bounded = max(abs(near_l), abs(near_r)) <= 2 * max(abs(wide_l), abs(wide_r)) + tol
    if not (np.isfinite(gap) and gap > 10 * tol and gap > 0.5 * abs(wide_r - wide_l)
            and bounded) or ad is None:
        return None
    (left, right), slack = _limits(quotients)
    if not min(left, right) - tol - slack <= ad <= max(left, right) + tol + slack:
        return None
    sides = (f"along input {i} coordinate {c}, output {o} coordinate {r} has one-sided "
             f"derivatives {_g(left)} (from below) and {_g(right)} (from above), which central "
             f"differences average; the {result.mode} side gives {_g(ad)}, between them")
    near = _near_tie(base, c, STEPS[-1] * max(1.0, abs(x)))
    if near is not None and _coupled(result, r, near[0]):
        j, apart = near
        return (f"the given inputs are within {apart:.1e} of a tie (input {i} coordinates {c} "
                f"and {j}), closer than the differences' steps: {sides}; the function may "
                "be smooth at that scale (a strict order of values is no tie), which "
                "differences at these steps cannot show, nor whether a formula that treats "
                "the near tie as a tie is right: check at inputs whose values are farther "
                "apart, or judge this one with an mpmath reference")
    what = "the function" if p.order == 1 else "the first derivative"
    return (f"the given inputs sit where {what} is not differentiable (a kink or a "
            f"tie): {sides}, as a subgradient convention does (relu'(0) = 0, max's gradient "
            "to one of tied entries); no derivative exists there: check at inputs away from "
            "kinks and ties, or explore around them (--explore judges such points one-sided)")


def _quotients(ev, result, base: np.ndarray, x: float, y: float) -> tuple | None:
    """The one-sided difference quotients ``(left, right)`` of ``result``'s worst
    entry at each of ``STEPS``, or ``None`` where a step leaves the domain."""
    o, i, (r, c) = result.out_idx, result.in_idx, result.where
    found = []
    for step in STEPS:
        h = step * max(1.0, abs(x))
        slopes = []
        for sign in (-1.0, 1.0):
            try:
                moved = value_at(ev, i, base, c, x + sign * h, o, r,
                                 "looking for a kink at the given inputs")
            except Exception:  # noqa: BLE001 - a step out of the domain says nothing here
                return None
            # (over the step taken: 0.3 + 1e-6 - 0.3 is 9.99999999973e-07, and a slope
            # of 1 read over 1e-6 is 0.99999999997, which AD's exact 1 is not "between")
            slopes.append((moved - y) / ((x + sign * h) - x))
        found.append(tuple(slopes))
    return tuple(found)


def _limits(quotients: tuple) -> tuple:
    """``((left, right), slack)``: the one-sided derivatives, each side's two
    quotients extrapolated linearly to a zero step, and how far the nearer step's
    quotient was from its limit (the larger side's). A side that curves
    (``x*x + x`` from above 0) has quotients ``f'(0+) + a h``: the nearer step's
    is ``a h`` off, far above the check's tolerance, and the AD value equal to
    ``f'(0+)`` lies outside the quotients though it is that side's derivative.
    The slack allows what extrapolation leaves of the curve."""
    (wide_l, wide_r), (near_l, near_r) = quotients
    share = STEPS[-1] / (STEPS[0] - STEPS[-1])
    moves = (near_l - wide_l, near_r - wide_r)
    limits = (near_l + share * moves[0], near_r + share * moves[1])
    return limits, share * max(abs(moves[0]), abs(moves[1]))


def _near_tie(base: np.ndarray, c: int, step: float) -> tuple | None:
    """``(j, gap)``: the coordinate of the same input nearest to coordinate ``c`` in
    value, when it differs from it by more than nothing and less than ``step``."""
    flat = base.reshape(-1)
    if flat.size < 2:
        return None
    apart = np.abs(flat - flat[c])
    apart[c] = np.inf
    apart[apart == 0] = np.inf    # (an exact tie is a tie)
    j = int(np.argmin(apart))
    return (j, float(apart[j])) if apart[j] < step else None


def _coupled(result, r: int, j: int) -> bool:
    """Whether output coordinate ``r`` moves with input coordinate ``j`` on either
    side (a tie needs both entries in one output: no entry of an elementwise
    function's output ties with another)."""
    for side in (result.expected, result.actual):
        block = None if side is None else np.asarray(side)
        if block is not None and block.ndim == 2 and r < block.shape[0] and \
                j < block.shape[1] and block[r, j] != 0:
            return True
    return False


def _g(value: float) -> str:
    return f"{value + 0.0:.6g}"   # (-0.0 + 0.0 is 0.0: no "-0")
