"""A Jacobian compared with itself (the reentrancy check when the repeat's batches
gave the first run's bits, so the repeat is the first Jacobian) is judged without
the comparator's array passes: the results must be the comparator's own, field
for field, NaN, inf, complex inputs, float32 blocks and empty blocks included."""
from __future__ import annotations

import numpy as np
import pytest

from adcheck.gradcheck.core.jacobian import Jacobian, Layout
from adcheck.gradcheck.verdict import compare as comparing
from adcheck.gradcheck.verdict.compare import compare_pair, compare_jacobians


def _jacobian(block0, block1, complex_in=False):
    layout = Layout({0: (block0.shape[1] // (2 if complex_in else 1),), 1: (block1.shape[1],)},
                    {0: complex_in, 1: False}, {0: (block0.shape[0],)}, {0: False})
    return Jacobian("reverse", layout, {(0, 0): block0, (0, 1): block1})


def _blocks(rng, kind):
    a = rng.standard_normal((3, 4))
    b = rng.standard_normal((3, 2))
    if kind == "nan-first":
        a[0, 0] = np.nan
    elif kind == "inf-inside":
        a[1, 2], b[2, 1] = np.inf, -np.inf
    elif kind == "nan-payload":
        a.view(np.uint64)[2, 3] = 0x7FF8000000000123
    elif kind == "float32":
        a, b = a.astype(np.float32), b.astype(np.float32)
    elif kind == "empty":
        b = np.zeros((3, 0))
    elif kind == "zeros":
        a[:] = 0.0
    return a, b


KINDS = ["plain", "nan-first", "inf-inside", "nan-payload", "float32", "empty", "zeros"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("complex_in", [False, True])
@pytest.mark.parametrize("atol,rtol", [(0.0, 0.0), (0.0, 8e-7), (1e-3, 0.0), (0.5, 0.25)])
def test_the_results_are_the_comparators(kind, complex_in, atol, rtol):
    a, b = _blocks(np.random.default_rng(3), kind)
    jac = _jacobian(a, b, complex_in)
    taken = compare_jacobians("reentrant", jac, jac, atol, rtol, None, explain=False,
                              same_nonfinite=True)
    # the comparator itself, pair by pair, on a copy (so no shortcut can apply)
    copy = _jacobian(a.copy(), b.copy(), complex_in)
    compared = [compare_pair("reentrant", copy, jac, 0, i, atol, rtol, None, False, True)
                for i in (0, 1)]
    assert [r.to_dict() for r in taken] == [r.to_dict() for r in compared]
    assert all(r.passed for r in taken)


def test_the_tolerance_at_the_first_entry_is_pytorchs_written_out():
    # an independent statement of what the comparator gives: atol + rtol * |e[0, 0]|
    block = np.array([[-4.0, 1.0], [2.0, 3.0]])
    jac = _jacobian(block, np.ones((2, 1)))
    result = compare_jacobians("reentrant", jac, jac, 1e-3, 0.5, same_nonfinite=True)[0]
    assert result.tolerance == 1e-3 + 0.5 * 4.0
    assert result.where == (0, 0) and result.max_error == 0.0 and result.passed


@pytest.mark.parametrize("why", ["other-object", "nan-fails", "tolerances", "negative"])
def test_other_comparisons_still_go_through_the_comparator(monkeypatch, why):
    a, b = _blocks(np.random.default_rng(5), "nan-first")
    jac = _jacobian(a, b)
    other = _jacobian(a.copy(), b.copy()) if why == "other-object" else jac
    same_nonfinite = why != "nan-fails"
    tolerances = {(0, 0): np.ones((3, 4)), (0, 1): np.ones((3, 2))} if why == "tolerances" \
        else None
    atol = -1.0 if why == "negative" else 0.0
    monkeypatch.setattr(comparing, "_compared_with_itself", None)   # (called: TypeError)
    results = compare_jacobians("reentrant", other, jac, atol, 0.0, tolerances, explain=False,
                                same_nonfinite=same_nonfinite)
    assert len(results) == 2
    if why == "nan-fails":   # a NaN never passes unless the same NaN may
        assert not results[0].passed
