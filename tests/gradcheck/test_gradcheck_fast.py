"""Fast mode: signed fresh probes, k probes, slow Jacobians on failure, and
the escape probabilities its docstring states (checked by simulation against
values computed independently with mpmath). The checked functions run on
each engine (the ``E`` fixture)."""
from __future__ import annotations

import gradcheck_zoo as zoo
import mpmath
import numpy as np
import pytest

from adcheck.gradcheck import check
from adcheck.gradcheck.core.fast import _unit_rows


def single_entry_miss(t):
    """P(|g1 g2| <= t) for independent standard Gaussians: (2/pi) int_0^t K0."""
    return float(2 / mpmath.pi * mpmath.quad(lambda s: mpmath.besselk(0, s), [0, t]))


def test_docstring_numbers_are_the_exact_probabilities():
    assert single_entry_miss(0.1) == pytest.approx(0.22, abs=0.005)
    assert single_entry_miss(0.01) == pytest.approx(0.036, abs=0.0005)
    assert single_entry_miss(0.001) == pytest.approx(0.005, abs=0.0005)
    assert float(mpmath.erf(0.1 / mpmath.sqrt(2))) == pytest.approx(0.08, abs=0.001)
    assert float(mpmath.erf(0.01 / mpmath.sqrt(2))) == pytest.approx(0.008, abs=0.0001)


@pytest.mark.parametrize("kind", ["single", "diffuse"])
def test_probe_distribution_gives_the_stated_miss_rate(kind):
    rng = np.random.default_rng(11)
    m = n = 48
    trials, t = 20000, 0.1
    if kind == "single":
        err = np.zeros((m, n))
        err[3, 5] = 1.0
        expected = single_entry_miss(t)
    else:
        err = rng.standard_normal((m, n))
        expected = float(mpmath.erf(t / mpmath.sqrt(2)))
    tau = t * np.linalg.norm(err) / np.sqrt(m * n)
    v, u = _unit_rows(rng, trials, m), _unit_rows(rng, trials, n)
    projections = np.einsum("ki,ij,kj->k", v, err, u)
    observed = np.mean(np.abs(projections) <= tau)
    assert observed == pytest.approx(expected, abs=0.015)


def linspace(E, n):
    return E.from_numpy(np.linspace(0.1, 1.0, n)).requires_grad_()


def test_fast_failure_reports_the_slow_jacobians_and_their_diagnosis(E):
    # exp on 3 complex numbers whose vjp lacks the conj()
    bug = zoo.entry("exp-vjp_missing_conj-complex")
    # seeded: fast mode's random projections can, rarely, miss the bug (the suite
    # once drew such a seed); this test is about what the report says of it
    report = check(bug.build(E), bug.inputs(E), fast_mode=True, seed=0)
    failure = report.failures[0]
    assert failure.check == "fast-reverse"
    assert failure.expected.shape == (6, 3) and failure.actual.shape == (6, 3)
    assert "conjugate" in failure.diagnosis
    assert "slow check" in failure.detail
    assert f"seed={report.seed}" in report.message()


def test_probes_are_signed_and_fresh_on_every_run(E):
    x = linspace(E, 8)
    seeds = {check(E.sin, (x,), fast_mode=True).seed for _ in range(3)}
    assert len(seeds) == 3
    rows = _unit_rows(np.random.default_rng(0), 1, 1000)
    assert (rows < 0).any() and (rows > 0).any()
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0)


def test_k_probes_and_the_seed_repeats_a_run(E):
    x = linspace(E, 5)
    first = check(E.exp, (x,), fast_mode=True, probes=4, seed=123)
    second = check(E.exp, (x,), fast_mode=True, probes=4, seed=123)
    assert first.jacobians["fast-reverse"][0, 0].shape == (4, 1)
    np.testing.assert_array_equal(first.jacobians["numerical"][0, 0],
                                  second.jacobians["numerical"][0, 0])
    # the probes, and the vectors that ride with them (two of the scaling check and,
    # on refengine, whose undefined gradients are zeros, one zero), twice: the
    # reentrancy repeat is batched as the first run was; torch's undefined
    # gradient is its own call
    riders = 2 + (E.__name__ == "adcheck.refengine")
    undefined = E.__name__ != "adcheck.refengine"
    assert first.counts["vjp"] == 2 * (4 + riders) + undefined


def test_fast_mode_costs_less_than_slow_mode(E):
    x = linspace(E, 20)
    fast = check(E.sin, (x,), fast_mode=True, check_forward_ad=True, seed=0)
    slow = check(E.sin, (x,), check_forward_ad=True, seed=0)
    assert fast.passed and slow.passed
    assert fast.counts["function"] < slow.counts["function"] / 4
