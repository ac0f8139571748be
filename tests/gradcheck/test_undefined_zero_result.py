"""The undefined-gradient check's result for exact zeros is taken without the
comparator's array passes: it must be the comparator's own result, field for
field, and anything else (a nonzero, a NaN, no entries) still goes through it."""
from __future__ import annotations

import numpy as np
import pytest

from adcheck.gradcheck.verdict import checks
from adcheck.gradcheck.verdict.compare import compare


def _compared(in_idx, array):
    found = np.zeros((1, 0)) if array is None else np.asarray(array).reshape(1, -1)
    return compare("undefined-grad", "reverse", "zero", None, in_idx, np.zeros_like(found),
                   found, 0.0)


@pytest.mark.parametrize("array", [
    np.zeros((3, 2)), -np.zeros(5), np.zeros(4, complex), np.array([0.0, 1e-300]),
    np.array([0.0, np.nan]), np.array([[0.0, -2.0]]), np.zeros(0), None,
    np.zeros(3, np.int64)], ids=["zeros", "minus-zeros", "complex", "tiny", "nan", "nonzero",
                                 "empty", "none", "integer"])
def test_the_result_is_the_comparators(array):
    taken, compared = checks._undefined_result(1, array), _compared(1, array)
    assert taken.passed == compared.passed
    # (a failure carries the check's own diagnosis on top of the comparison)
    assert (taken.diagnosis is not None) == (not compared.passed)
    taken, compared = taken.to_dict(), compared.to_dict()
    taken.pop("diagnosis"), compared.pop("diagnosis")
    assert taken == compared


def test_zero_times_a_nan_factor_is_said_as_nan():
    # a backward g * x * (a - 1) / (a * (a - 1)) at a = 1 (entmax's alpha gradient at 1):
    # every term multiplies g, and zero times 0/0 is NaN; it was said to add "a term that
    # does not multiply grad_output"
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    a = torch.ones(3, dtype=torch.float64)
    g = torch.zeros(3, dtype=torch.float64)
    made = (g * a * (a - 1) / (a * (a - 1))).numpy()
    assert np.isnan(made).all()
    nan = checks._undefined_result(1, made)
    assert not nan.passed and "returns NaN or inf" in nan.diagnosis
    assert "does not multiply grad_output" not in nan.diagnosis
    constant = checks._undefined_result(1, np.full(3, 0.5))
    assert "does not multiply grad_output" in constant.diagnosis
