"""A check against the mpmath reference never swaps it for finite differences.

Before issue 32's fix, a ``reference=`` check whose Jacobian exceeded the
memory budget went to the chunked path and compared with finite differences,
saying nothing. It is now refused, naming the budget and both ways out.
"""
from __future__ import annotations

import mpmath
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from adcheck import gradcheck  # noqa: E402
from adcheck.gradcheck.errors import UncheckableError  # noqa: E402


def _sin_reference(a):
    return np.vectorize(mpmath.sin, otypes=[object])(a)


def test_reference_beyond_the_budget_is_refused_not_swapped():
    x = (torch.rand(400, dtype=torch.float64) + 0.5).requires_grad_()   # 160,000 entries
    with pytest.raises(UncheckableError, match=r"mpmath reference .* 160,000 entries, beyond "
                                                r"the memory budget of 1 MiB"):
        gradcheck.check(torch.sin, (x,), reference=_sin_reference, memory_budget=2**20)


def test_the_same_function_without_reference_is_still_chunked():
    # the refusal is the reference's: finite differences in chunks remain available
    x = (torch.rand(400, dtype=torch.float64) + 0.5).requires_grad_()
    report = gradcheck.check(torch.sin, (x,), memory_budget=2**20)
    assert report.plan == "chunked" and report.passed


def test_reference_within_the_budget_compares_with_the_reference():
    x = (torch.rand(3, dtype=torch.float64) + 0.5).requires_grad_()
    report = gradcheck.check(torch.sin, (x,), reference=_sin_reference, memory_budget=2**20)
    assert report.passed and "reference" in report.jacobians
