"""Each tolerance adcheck applies, pinned from both sides: a formula wrong by a
little more than the tolerance is caught, by a little less it passes.

The function is ``f(x) = C x`` (elementwise, or summed to a scalar) written
as a refengine Function whose vjp and jvp are ``C (1 + delta)``: every entry
of the Jacobian wrong by the relative ``delta``. Its finite differences are
exact to rounding (a linear function), so the only thing between the planted
error and the verdict is the tolerance. The tolerances are the documented
formulas, written here apart from the code: ``atol + rtol |n|`` (PyTorch's,
the default), ``sqrt(eps) / 2 |n| + AD_ULPS eps max |n|`` (precise, float64),
the resolution a low-precision check states, and a probed check's cells
(``rtol`` or ``sqrt(eps) / 2`` of each).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import adcheck.refengine as E
from adcheck.gradcheck import check

C = 3.0
EPS = float(np.finfo(np.float64).eps)
#: the precise mode's relative allowance in float64, per the documentation
PRECISE = math.sqrt(EPS) / 2 + 4096 * EPS
ABOVE, BELOW = 1.25, 0.8


def _scaled(delta: float, total: bool = False):
    """``C x`` (or its sum) whose derivatives are ``C (1 + delta)``."""
    wrong = C * (1.0 + delta)

    class Scaled(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return (C * x).sum() if total else C * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * E.full_like(x, wrong) if total else g * wrong

        @staticmethod
        def jvp(ctx, t):
            return (t * wrong).sum() if total else t * wrong
    return Scaled.apply


def _input(dtype=E.float64, n: int = 6):
    rng = np.random.default_rng(3)
    return E.from_numpy(rng.uniform(0.5, 1.5, n)).to(dtype).requires_grad_()


def _verdicts(delta: float, **options) -> dict:
    report = check(_scaled(delta, options.pop("total", False)), (_input(options.pop(
        "dtype", E.float64)),), check_forward_ad=True, check_scaling=False,
        check_adjoint=False, seed=0, **options)
    return {r.check: r.passed for r in report.results if r.check in ("forward", "reverse")}


def _both(verdicts: dict, expected: bool) -> None:
    assert verdicts and set(verdicts.values()) == {expected}, verdicts


@pytest.mark.parametrize("rtol, atol", [(1e-3, 1e-5), (1e-5, 0.0)])
def test_the_default_tolerance_atol_plus_rtol(rtol, atol):
    # error delta C against atol + rtol C: delta at the threshold is rtol + atol / C
    threshold = rtol + atol / C
    _both(_verdicts(ABOVE * threshold, rtol=rtol, atol=atol), False)
    _both(_verdicts(BELOW * threshold, rtol=rtol, atol=atol), True)


def test_the_default_tolerance_is_pytorchs_when_none_is_given():
    threshold = 1e-3 + 1e-5 / C
    _both(_verdicts(ABOVE * threshold), False)
    _both(_verdicts(BELOW * threshold), True)


def test_the_precise_allowance_in_double_precision():
    _both(_verdicts(ABOVE * PRECISE, precise=True), False)
    _both(_verdicts(BELOW * PRECISE, precise=True), True)


def test_a_precise_failure_states_the_tolerance_it_applied():
    report = check(_scaled(ABOVE * PRECISE), (_input(),), precise=True, seed=0,
                   check_scaling=False, check_adjoint=False)
    failure = report.failures[0]
    assert failure.tolerance == pytest.approx(PRECISE * C, rel=0.05)
    assert failure.max_error == pytest.approx(ABOVE * PRECISE * C, rel=1e-3)


def _stated_resolution(**options) -> float:
    report = check(_scaled(0.0), (_input(E.float32),), precise=True, seed=0,
                   check_forward_ad=True, check_scaling=False, check_adjoint=False, **options)
    assert report.passed, report.message()
    found = {r.precision.resolution for r in report.results
             if r.check in ("forward", "reverse") and r.precision is not None}
    assert len(found) == 1, found
    return found.pop()


def test_the_resolution_a_float32_check_states_is_where_it_catches():
    resolution = _stated_resolution()
    # float32 rounds each derivative to 6e-8: the stated resolution is a few of those
    assert 1e-7 < resolution < 1e-4
    _both(_verdicts(ABOVE * resolution, precise=True, dtype=E.float32), False)
    _both(_verdicts(BELOW * resolution, precise=True, dtype=E.float32), True)


@pytest.mark.parametrize("precise, relative", [(False, 1e-4), (True, PRECISE)])
def test_a_probed_checks_cells(precise, relative):
    # each cell (J u)_i within rtol (or the precise allowance) of itself, atol 0
    options = {"jacobian": "probed", "probes": 3, "precise": precise, "atol": 0.0}
    if not precise:
        options["rtol"] = relative
    assert _verdicts(ABOVE * relative, **options)["forward"] is False
    assert _verdicts(BELOW * relative, **options)["forward"] is True
    # one output: W is a sign, so reverse mode's projection is exact too
    _both(_verdicts(ABOVE * relative, total=True, **options), False)
    _both(_verdicts(BELOW * relative, total=True, **options), True)
