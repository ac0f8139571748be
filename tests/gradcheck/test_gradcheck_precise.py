"""precise=True: no false alarms on correct ops, 1e-6 errors caught.

The correct formulas are each engine's own ops (torch's are an independent
oracle; refengine's are checked against torch by the conformance and opinfo
suites); the wrong ones are inv's formula scaled by 1 + 1e-6 in one entry or
everywhere (the zoo's ``scaled_inv``).
"""
from __future__ import annotations

import gradcheck_zoo as zoo
import numpy as np
import pytest

from adcheck.gradcheck import check


def rand(E, *shape, complex_=False, low=-1.0, high=1.0, seed=0):
    rng = np.random.default_rng(seed)
    values = rng.uniform(low, high, shape)
    if complex_:
        values = values + 1j * rng.uniform(low, high, shape)
    return E.from_numpy(values).requires_grad_()


def spd(E, n, seed=0):
    a = rand(E, n, n, seed=seed).detach()
    return (a @ a.T + n * E.eye(n, dtype=E.float64)).requires_grad_()


def eye(E, n):
    return E.eye(n, dtype=E.float64)


OPS = [
    ("sin", lambda E: E.sin, lambda E, s: (rand(E, 5, seed=s),)),
    ("log_small", lambda E: E.log, lambda E, s: (rand(E, 5, low=0.01, high=0.1, seed=s),)),
    ("sqrt_small", lambda E: E.sqrt, lambda E, s: (rand(E, 5, low=1e-3, high=2, seed=s),)),
    ("tan", lambda E: E.tan, lambda E, s: (rand(E, 5, low=-1.4, high=1.4, seed=s),)),
    ("lgamma", lambda E: E.lgamma, lambda E, s: (rand(E, 5, low=0.1, high=6, seed=s),)),
    ("erf", lambda E: E.erf, lambda E, s: (rand(E, 5, low=-3, high=3, seed=s),)),
    ("expm1", lambda E: E.expm1, lambda E, s: (rand(E, 5, low=-1e-3, high=1e-3, seed=s),)),
    ("pow", lambda E: E.pow, lambda E, s: (rand(E, 4, low=0.5, high=2, seed=s),
                                           rand(E, 4, seed=s + 1))),
    ("atan2", lambda E: E.atan2, lambda E, s: (rand(E, 4, seed=s), rand(E, 4, seed=s + 1))),
    ("large_scale_exp", lambda E: E.exp, lambda E, s: (rand(E, 4, low=20, high=30, seed=s),)),
    ("inv", lambda E: E.linalg.inv, lambda E, s: (spd(E, 3, s),)),
    ("det", lambda E: E.linalg.det, lambda E, s: (rand(E, 3, 3, seed=s),)),
    ("cholesky", lambda E: (lambda a: E.linalg.cholesky(a @ a.mT + 3 * eye(E, 3))),
     lambda E, s: (rand(E, 3, 3, seed=s),)),
    ("eigh_values", lambda E: (lambda a: E.linalg.eigvalsh(a + a.T)),
     lambda E, s: (rand(E, 3, 3, seed=s),)),
    ("logsumexp", lambda E: (lambda x: E.logsumexp(x, 0)), lambda E, s: (rand(E, 6, seed=s),)),
    ("c_exp", lambda E: E.exp, lambda E, s: (rand(E, 4, complex_=True, seed=s),)),
    ("c_log", lambda E: E.log, lambda E, s: (rand(E, 4, complex_=True, low=0.1, seed=s),)),
    ("c_abs", lambda E: E.abs, lambda E, s: (rand(E, 4, complex_=True, seed=s),)),
    ("c_angle", lambda E: E.angle, lambda E, s: (rand(E, 4, complex_=True, seed=s),)),
    ("c_sqrt", lambda E: E.sqrt, lambda E, s: (rand(E, 4, complex_=True, low=0.1, seed=s),)),
    ("c_reciprocal", lambda E: E.reciprocal,
     lambda E, s: (rand(E, 4, complex_=True, low=0.2, seed=s),)),
    ("c_inv", lambda E: E.linalg.inv,
     lambda E, s: ((rand(E, 3, 3, complex_=True, seed=s).detach() + 2 * eye(E, 3))
                   .requires_grad_(),)),
    ("c_mixed_mul", lambda E: E.mul, lambda E, s: (rand(E, 3, seed=s),
                                                   rand(E, 3, complex_=True, seed=s + 1))),
    ("c_real_of_product", lambda E: (lambda a, b: (a * b.conj()).real),
     lambda E, s: (rand(E, 3, complex_=True, seed=s), rand(E, 3, complex_=True, seed=s + 1))),
]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("name,op,make", OPS, ids=[o[0] for o in OPS])
def test_correct_op_passes_precise(E, name, op, make, seed):
    # torch's formulas are the oracle; refengine's are cross-checked against torch elsewhere
    report = check(op(E), make(E, seed), precise=True, check_forward_ad=True, seed=seed)
    assert report.passed, report.message()


@pytest.mark.parametrize("complex_", [False, True], ids=["float64", "complex128"])
@pytest.mark.parametrize("entry", [None, (1, 2)], ids=["everywhere", "one_entry"])
def test_relative_error_1e_6_in_a_matrix_op_is_caught(E, complex_, entry):
    a = (rand(E, 3, 3, complex_=complex_, seed=3).detach() + 2 * eye(E, 3)).requires_grad_()
    wrong = zoo.scaled_inv(E, 1e-6, entry)
    assert check(wrong, (a,), seed=0).passed, "1e-6 is far below the default rtol"
    report = check(wrong, (a,), precise=True, seed=0)
    assert not report.passed
    if entry is None:
        assert "1.000001 times" in report.diagnosis
    failing = report.failures[0]
    assert failing.check == "reverse" and failing.max_error > failing.tolerance


def test_richardson_error_estimate_bounds_the_true_error(E):
    # d/dx sin at known points: the true error is measurable exactly
    from adcheck.gradcheck import numerical_jacobian
    x = E.from_numpy(np.array([0.3, 1.1, -2.0])).requires_grad_()
    jac = numerical_jacobian(E.sin, (x,), precise=True)
    true = np.diag(np.cos(x.detach().numpy()))
    actual_error = np.abs(jac[0, 0] - true)
    assert np.all(actual_error <= jac.errors[0, 0] + 1e-300)
    assert np.max(jac.errors[0, 0]) < 1e-9


def test_an_empty_output_beside_a_full_one_is_checked_not_refused(E):
    # add's registry sample 5: an empty (0, 2) input broadcast with a (2,) one; the
    # extrapolation's noise floor over zero output entries is zero, not a NumPy error
    empty, row = rand(E, 0, 2), rand(E, 2, seed=1)
    report = check(lambda a, b: (a + b, b.sin()), (empty, row), precise=True,
                   check_forward_ad=True)
    assert report.passed, report.message()
    assert {r.out_idx for r in report.results if r.check == "reverse"} >= {1}
