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
