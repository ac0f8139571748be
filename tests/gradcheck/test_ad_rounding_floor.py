"""The AD side's measured rounding in the precise allowance (issue 35, item 5).

A failed precise comparison is judged again with ``FACTOR`` times the AD
values' second difference at inputs moved by a few ulps
(``numerics.adrounding``, ``verdict.adfloor``). The cases:

- a formula right but for rounding-like noise in its vjp (a term that is
  deterministic in the input's bits, and changes when they move by an ulp,
  as the rounding of a long factorization does): failed without the floor,
  passes with it, and says why;
- the same noise plus a wrong factor of 1e-6: still caught;
- a formula wrong at 1.05 times the precise allowance whose values do not
  move (a linear function): caught, and the floor it measured is zero;
- a check that passes measures nothing (the cost is paid only on failure);
- svd_lowrank's complex128 second derivative (op_db's sample, bench/
  probed_tolerance.md): the seeds whose dense or probed check failed on
  torch's double-backward rounding pass.

The planted thresholds of tests/gradcheck/test_tolerance_thresholds.py run
unchanged beside these.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import adcheck.refengine as E
from adcheck.gradcheck import check
from adcheck.gradcheck.numerics import adrounding
from adcheck.gradcheck.verdict import adfloor

C = 3.0
EPS = float(np.finfo(np.float64).eps)
#: the precise mode's relative allowance in float64, per the documentation
PRECISE = math.sqrt(EPS) / 2 + 4096 * EPS


def _noisy(amplitude: float, delta: float = 0.0):
    """``C x`` whose vjp is ``C (1 + delta) + amplitude C sin(2^50 x)``: for ``x``
    near 1, ``2^50 x`` moves by a quarter turn per ulp of ``x``, so the extra
    term is fixed at fixed inputs (reentrant) and changes under moves of a few
    ulps, as rounding does; the forward (and so finite differences) is exact."""
    class Noisy(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return C * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * (C * (1.0 + delta) + amplitude * C * E.sin(x * 2.0 ** 50))
    return Noisy.apply


def _input(n: int = 6):
    rng = np.random.default_rng(3)
    return E.from_numpy(rng.uniform(0.5, 1.5, n)).requires_grad_()


def _reverse(func, **options):
    report = check(func, (_input(),), precise=True, check_scaling=False, seed=0, **options)
    return [r for r in report.results if r.check == "reverse"]


def test_rounding_like_noise_in_the_vjp_fails_the_allowance_and_passes_with_the_floor(
        monkeypatch):
    # 2.5 times the allowance: the check without the floor calls it wrong ...
    noisy = _noisy(2.5 * PRECISE)
    monkeypatch.setattr(adfloor, "moved_evaluators", lambda ev: [])
    assert not any(r.passed for r in _reverse(noisy))
    monkeypatch.undo()
    # ... with it, the moved values show the noise, and the failure is excused
    results = _reverse(noisy)
    assert results and all(r.passed for r in results)
    assert "measured rounding" in results[0].detail


def test_a_wrong_factor_of_1e6_is_caught_through_the_noise():
    results = _reverse(_noisy(2.5 * PRECISE, delta=1e-6))
    assert results and not any(r.passed for r in results)


def test_a_formula_whose_values_do_not_move_gets_no_floor(monkeypatch):
    seen = []
    second = adrounding.second_differences

    def spy(base, moved, keys):
        found = second(base, moved, keys)
        seen.append(found)
        return found
    monkeypatch.setattr(adrounding, "second_differences", spy)
    # wrong by 1.05 times the allowance, and linear: its vjp does not move at all
    results = _reverse(_noisy(0.0, delta=1.05 * PRECISE))
    assert results and not any(r.passed for r in results)
    assert seen and all(v == 0.0 for found in seen for v in found.values())


def test_a_check_that_passes_measures_nothing(monkeypatch):
    def refuse(ev):
        raise AssertionError("moved the inputs of a check that passed")
    monkeypatch.setattr(adfloor, "moved_evaluators", refuse)
    results = _reverse(_noisy(0.0, delta=0.5 * PRECISE))
    assert results and all(r.passed for r in results)


def test_the_floor_is_capped_at_sqrt_eps_of_the_blocks_largest_entry():
    from adcheck.gradcheck.core.jacobian import Jacobian
    from adcheck.gradcheck.core.problem import Problem
    layout = Problem(lambda x: C * x, (_input(),)).layout
    expected = Jacobian("numerical", layout, {(0, 0): C * np.eye(6)})
    floor = adrounding.floors({(0, 0): 1.0}, expected, EPS)
    assert floor[(0, 0)] == pytest.approx(adrounding.FACTOR * adrounding.CAP * math.sqrt(EPS) * C)


def test_values_that_move_beyond_the_cap_fail_and_say_they_are_no_sharper():
    # noise of 1e-6 of the entry (70 times the cap of sqrt(eps)): the floor may
    # not excuse it, but the report must say that the AD values move that much,
    # so that a reader does not take unstable digits for a wrong branch or mask
    results = _reverse(_noisy(1e-6))
    assert results and not any(r.passed for r in results)
    assert "the AD values themselves move by up to" in results[0].detail


def test_a_wrong_formula_whose_values_do_not_move_is_not_called_unsteady():
    results = _reverse(_noisy(0.0, delta=1e-4))
    assert results and not any(r.passed for r in results)
    assert "themselves move" not in (results[0].detail or "")
