"""Reports, messages, JSON, and the diagnosis of synthetic error shapes."""
from __future__ import annotations

import json

import gradcheck_zoo as zoo
import numpy as np
import pytest

from adcheck.gradcheck import GradcheckError, Report, check, gradcheck
from adcheck.gradcheck.verdict.diagnosis import diagnose

# sin on complex numbers whose vjp lacks the conj()
CONJ_BUG = zoo.entry("sin-vjp_missing_conj-complex")


def test_error_message_follows_the_model(E):
    with pytest.raises(GradcheckError) as info:
        gradcheck(CONJ_BUG.build(E), CONJ_BUG.inputs(E), seed=0)
    message = str(info.value)
    first = message.splitlines()[0]
    assert first.startswith("sin_vjp_missing_conj: reverse-mode Jacobian differs from numerical "
                            "for output 0, input 0 (max error ")
    assert "analytical is the conjugate of numerical: the vjp probably lacks a conj()" in first
    assert "\n  numerical:\n" in message and "\n  reverse:\n" in message
    assert isinstance(info.value, RuntimeError)
    assert isinstance(info.value.report, Report) and not info.value.report.passed


def test_second_order_failures_are_named_as_such(E):
    bug = zoo.entry("sin-dd_sign-2nd-real")
    report = check(bug.build(E), bug.inputs(E), order=2, check_forward_ad=True, seed=0)
    lines = report.message().splitlines()
    assert lines[0].startswith("sin_dd_sign_2nd: reverse-over-reverse (second-order) Jacobian "
                               "differs from numerical for output 0, input 0 (max error "), lines[0]
    assert any(line.startswith("sin_dd_sign_2nd: forward-over-reverse (second-order) Jacobian")
               for line in lines), lines
    assert report.name == "sin_dd_sign_2nd" and report.order == 2
    assert {r.order for r in report.results} == {2}
    assert report.to_dict()["failures"][0]["order"] == 2


def test_report_holds_jacobians_counts_and_time(E):
    x = E.from_numpy(np.array([0.1, 0.2, 0.3])).requires_grad_()
    report = check(E.sin, (x,), check_forward_ad=True, seed=0)
    assert report.passed and report.diagnosis is None and report.failures == []
    assert set(report.jacobians) == {"numerical", "reverse", "forward"}
    # 1 call + 1 more at the given inputs (determinism compares it with the first)
    # + 6 finite differences + 3 jvp columns + 2 jvps for scaling + 4 beside the
    # point, two moves each way (verdict.pointvalue: the value is the limit there)
    assert report.counts["function"] == 17
    # 3 rows + 2 for scaling + 1 with undefined output grads (on refengine, whose
    # undefined gradients are zeros, riding with the rows; torch's is a call of its
    # own), twice what rides (the reentrancy repeat is batched as the first run)
    riders = 2 + (E.__name__ == "adcheck.refengine")
    assert report.counts["vjp"] == 2 * (3 + riders) + (E.__name__ != "adcheck.refengine")
    assert report.counts["jvp"] == 5
    assert report.seconds > 0
    checks = {r.check for r in report.results}
    assert {"reverse", "forward", "adjoint", "reentrant", "scaling", "undefined-grad"} <= checks


def test_to_dict_is_json_serializable_with_out_idx_and_in_idx(E):
    report = check(CONJ_BUG.build(E), CONJ_BUG.inputs(E), seed=0)
    data = json.loads(json.dumps(report.to_dict()))
    assert data["passed"] is False
    failure = data["failures"][0]
    assert failure["out_idx"] == 0 and failure["in_idx"] == 0
    assert failure["check"] == "reverse" and "conjugate" in failure["diagnosis"]
    assert data["jacobians"]["numerical"]["mode"] == "numerical"
    assert isinstance(failure["expected"][0][0], list)  # complex entries as [re, im]
    assert data["settings"]["seed"] == 0 and data["settings"]["precise"] is False


def test_where_points_at_the_largest_error(E):
    x = E.from_numpy(np.array([1.0, 2.0, 3.0, 4.0])).requires_grad_()
    report = check(zoo.one_wrong_entry(E, entry=2, extra=0.5), (x,), seed=0)
    failure = report.failures[0]
    assert failure.where == (2, 2) and failure.max_error == pytest.approx(0.5, rel=1e-6)
    assert "only 1 of 4 nonzero entries differ" in report.diagnosis


RNG = np.random.default_rng(5)
E_REAL = RNG.standard_normal((3, 3))
TOL = np.full((3, 3), 1e-6)


@pytest.mark.parametrize("actual,phrase", [
    (2.0 * E_REAL, "analytical is 2 times numerical"),
    (-E_REAL, "minus numerical"),
    (E_REAL.T, "transpose"),
    (np.zeros((3, 3)), "analytical is zero"),
    (E_REAL * (1 + 1e-4), "1.0001 times"),
    (E_REAL + np.diag([0.0, 0.3, 0.0]), "only 1 of 9"),
])
def test_diagnosis_of_real_error_shapes(actual, phrase):
    assert phrase in diagnose(E_REAL, actual, TOL, "reverse", False, False)


def test_a_factor_is_named_beside_tiny_couplings():
    # (qpth's interior point: a gradient off by a half plus 1e-9 couplings where the
    # Jacobian is zero read "a reduction over the wrong axis")
    e = np.diag([3.0, -1.0, 2.0, 0.5])
    a = 0.5 * e + 1e-9
    tol = np.full((4, 4), 1e-10)
    found = diagnose(e, a, tol, "reverse", False, False)
    assert found.startswith("analytical is 1/2 times numerical")
    rest = found.split("; beyond that factor, ")[1]
    assert rest.split(" entries are off by at most ")[0] in ("12", "13", "14", "15", "16")
    assert float(rest.split("at most ")[1]) < 2e-9
    # a coupling as large as the error is no footnote to a factor
    assert "times numerical" not in diagnose(e, 0.5 * e + 0.3, tol, "reverse", False, False)


def holomorphic_block(values):
    n = len(values)
    block = np.zeros((2 * n, 2 * n))
    for k, c in enumerate(values):
        block[2 * k:2 * k + 2, 2 * k:2 * k + 2] = [[c.real, -c.imag], [c.imag, c.real]]
    return block


def test_diagnosis_of_complex_error_shapes():
    values = [0.5 + 1.5j, -2.0 + 0.3j]
    e = holomorphic_block(values)
    tol = np.full((4, 2), 1e-6)
    conj = holomorphic_block([v.conjugate() for v in values])
    assert "conjugate" in diagnose(e, conj, tol, "reverse", True, True)
    times_i = holomorphic_block([1j * v for v in values])
    assert "times numerical" in diagnose(e, times_i, tol, "reverse", True, True)
    no_imag = e.copy()
    no_imag[:, 1::2] = 0
    assert "imaginary axis" in diagnose(e, no_imag, tol, "reverse", True, True)


def test_the_one_comparison_counts_nan_as_failing_and_points_at_a_failure():
    from adcheck.gradcheck.verdict.compare import compare
    expected = np.array([[1.0, 2.0, 3.0]])
    found = np.array([[1.0, 2.5, np.nan]])
    result = compare("reverse", "reverse", "numerical", 0, 0, expected, found,
                     np.array([[0.1, 1.0, 0.1]]))
    assert not result.passed and result.where == (0, 2) and result.max_error == np.inf
    within = compare("reverse", "reverse", "numerical", 0, 0, expected, expected + 0.05, 0.1)
    assert within.passed and within.tolerance == 0.1 and within.diagnosis is None
