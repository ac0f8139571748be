"""Reports, messages, JSON, and the diagnosis of synthetic error shapes."""
from __future__ import annotations

import json

import numpy as np
import pytest

from gradcheck import GradcheckError, Report, check, gradcheck
from gradcheck.diagnosis import diagnose

torch = pytest.importorskip("torch", reason="the failing functions are torch Functions")


class ConjBug(torch.autograd.Function):
    """sin on complex inputs whose vjp lacks the conj()."""

    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return torch.sin(z)

    @staticmethod
    def backward(ctx, g):
        z, = ctx.saved_tensors
        return g * torch.cos(z)


def zc():
    return torch.tensor([0.5 + 0.5j, -1.0 + 0.2j], dtype=torch.complex128, requires_grad=True)


def test_error_message_follows_the_model():
    with pytest.raises(GradcheckError) as info:
        gradcheck(ConjBug.apply, (zc(),), seed=0)
    message = str(info.value)
    first = message.splitlines()[0]
    assert first.startswith("ConjBug: reverse-mode Jacobian differs from numerical for output 0, "
                            "input 0 (max error ")
    assert "analytical is the conjugate of numerical: the vjp probably lacks a conj()" in first
    assert "\n  numerical:\n" in message and "\n  reverse:\n" in message
    assert isinstance(info.value, RuntimeError)
    assert isinstance(info.value.report, Report) and not info.value.report.passed


def test_report_holds_jacobians_counts_and_time():
    x = torch.tensor([0.1, 0.2, 0.3], dtype=torch.float64, requires_grad=True)
    report = check(torch.sin, (x,), check_forward_ad=True, seed=0)
    assert report.passed and report.diagnosis is None and report.failures == []
    assert set(report.jacobians) == {"numerical", "reverse", "forward"}
    # 1 call + 6 finite differences + 3 jvp columns + 2 jvps for scaling
    assert report.counts["function"] == 12
    # 3 rows twice (reentrancy) + 2 for scaling + 1 with undefined output grads
    assert report.counts["vjp"] == 9
    assert report.counts["jvp"] == 5
    assert report.seconds > 0
    checks = {r.check for r in report.results}
    assert {"reverse", "forward", "adjoint", "reentrant", "scaling", "undefined-grad"} <= checks


def test_to_dict_is_json_serializable_with_out_idx_and_in_idx():
    report = check(ConjBug.apply, (zc(),), seed=0)
    data = json.loads(json.dumps(report.to_dict()))
    assert data["passed"] is False
    failure = data["failures"][0]
    assert failure["out_idx"] == 0 and failure["in_idx"] == 0
    assert failure["check"] == "reverse" and "conjugate" in failure["diagnosis"]
    assert data["jacobians"]["numerical"]["mode"] == "numerical"
    assert isinstance(failure["expected"][0][0], list)  # complex entries as [re, im]


def test_where_points_at_the_largest_error():
    class OneEntry(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 3

        @staticmethod
        def backward(ctx, g):
            grad = 3 * g
            grad[2] = grad[2] + 0.5 * g[2]
            return grad
    x = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64, requires_grad=True)
    report = check(OneEntry.apply, (x,), seed=0)
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
