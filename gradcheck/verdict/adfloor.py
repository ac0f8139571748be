"""A failed precise comparison judged again with the AD side's measured rounding.

Only on failure (a check that passes costs nothing more): the AD side's
Jacobian, or its cells, is made again at the inputs moved by a few ulps
(``noise.moved_evaluators``), and each failed block is compared again
within its tolerance plus ``numerics.adrounding``'s floor. A block that then
passes says so in its detail.
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.lowprec.lowprecision import is_narrow
from adcheck.gradcheck.numerics import adrounding
from adcheck.gradcheck.verdict.noise import moved_evaluators
from adcheck.gradcheck.verdict.compare import compare_pair
from adcheck.gradcheck.verdict.diagnosis import FLOAT32_ROUNDING


def rejudge(ev, produce, expected, actual, tolerances: dict | None, results: list,
            scheme, epsilon: float) -> list:
    """``results`` (of ``actual`` against ``expected`` within ``tolerances``),
    each failed finite block compared again with the measured AD rounding when
    the check's ``scheme`` (``numerics.scheme``) estimates its errors (a precise
    check); ``produce(ev)`` makes ``actual`` for an ``Evaluator``."""
    failed = [r for r in results if not r.passed and r.max_error is not None
              and np.isfinite(r.max_error) and (r.out_idx, r.in_idx) in (tolerances or {})]
    # a narrower formula's allowance is its dtype's rounding already (lowprec)
    if not scheme.estimates_error or not failed or is_narrow(ev.problem):
        return results
    keys = [(r.out_idx, r.in_idx) for r in failed]
    try:
        moved = [(produce(plus), produce(minus)) for plus, minus in moved_evaluators(ev)]
    except Exception:  # noqa: BLE001 - no AD values at the moved inputs: nothing measured
        return results
    if not moved:
        return results
    second = adrounding.second_differences(actual, moved, keys)
    floor = adrounding.floors(second, expected, epsilon)
    wider = adrounding.widened({k: tolerances[k] for k in keys}, floor)
    again = {}
    for key in keys:
        if floor[key] > 0:
            found = compare_pair(actual.mode, expected, actual, *key, 0.0, 0.0, wider[key])
            if found.passed:
                found.detail = (f"within the AD values' measured rounding: they move by up to "
                                f"{second[key]:.1e} when the inputs move by a few ulps, and "
                                f"{adrounding.FACTOR:g} times that is added to the tolerance")
                again[key] = found
    for r in failed:
        unsteady = adrounding.unsteady(second[(r.out_idx, r.in_idx)], expected,
                                       (r.out_idx, r.in_idx), epsilon)
        if (r.out_idx, r.in_idx) not in again and unsteady:
            r.detail = f"{r.detail}; {unsteady}" if r.detail else unsteady
            if r.diagnosis and FLOAT32_ROUNDING in r.diagnosis:
                # (an error of float32's size at every entry is the AD's own rounding
                # here, not a float32 value inside the formula: ormqr at |x| = 400)
                r.diagnosis = None
    return [again.get((r.out_idx, r.in_idx), r) for r in results]
