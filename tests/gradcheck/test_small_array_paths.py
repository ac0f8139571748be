"""The short paths a small check takes through its NumPy helpers give what the
general paths give, bit for bit (issue 34: a fast check's own work).

Each short path skips calls on the usual case (a block without NaN or inf, a
float64 array already of the dtype asked for, a tolerance of one number); the
references here are written out in plain Python or NumPy's own reductions.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from adcheck.gradcheck.core import coords
from adcheck.gradcheck.core.fast import _normalized
from adcheck.gradcheck.core.jacobian import Jacobian, Layout, projection_layout
from adcheck.gradcheck.verdict.compare import _compared_with_itself, compare


def _blocks(rng):
    """Small and larger blocks, with and without NaN and inf, in several dtypes."""
    out = [np.zeros(0), np.array([-0.0]), np.array([3.0, -7.5]), np.array([[np.nan, 2.0]]),
           np.array([np.inf, -1.0]), np.array([-np.inf]), np.array([np.nan])]
    for shape in ((1, 1), (5, 5), (3, 1000)):
        x = rng.standard_normal(shape) * 10.0 ** rng.integers(-30, 30)   # (float32 holds it)
        out += [x, x.astype(np.float32), x + 1j * x[::-1], x[:, ::2]]
    return out


def _plain_largest(values) -> float:
    finite = [abs(complex(v)) for v in np.ravel(values) if np.isfinite(v)]
    return float(max(finite, default=0.0))


def test_largest_finite_is_the_largest_finite_magnitude():
    for block in _blocks(np.random.default_rng(1)):
        found = coords.largest_finite(block)
        assert type(found) is float
        expected = _plain_largest(block)
        # (complex moduli by Python's abs may differ from NumPy's hypot by an ulp)
        assert found == pytest.approx(expected, rel=1e-15) if np.iscomplexobj(block) \
            else found == expected


def test_norm_is_the_root_of_numpys_own_sum():
    for block in _blocks(np.random.default_rng(2)):
        squares = np.square(np.abs(block) if np.iscomplexobj(block) else block)
        found = coords.norm(block)
        assert type(found) is float
        expected = float(np.sqrt(np.sum(squares)))   # (float32 stays float32 until the root)
        assert found == expected or (math.isnan(found) and math.isnan(expected))


def test_real_view_reads_what_to_real_copies():
    rng = np.random.default_rng(3)
    for block in _blocks(rng):
        assert coords.real_view(block).tobytes() == coords.to_real(block).tobytes()
    x = rng.standard_normal((4, 3))
    assert np.shares_memory(coords.real_view(x), x)   # a float64 array is read in place
    assert not np.shares_memory(coords.to_real(x), x)


def test_from_real_of_a_list_and_of_dtype_names():
    values = [0.5, -1.25, 3.0, 4.5]
    for dtype in (np.float64, "float32", np.dtype(np.complex128), "complex64"):
        shape = (2,) if np.dtype(dtype).kind == "c" else (4,)
        found = coords.from_real(values, shape, dtype)
        assert found.dtype == np.dtype(dtype)
        if found.dtype.kind == "c":
            assert found.tolist() == [complex(0.5, -1.25), complex(3.0, 4.5)]
        else:
            assert found.tolist() == values


def test_normalized_rows_are_unit_and_zero_rows_stay_zero():
    rng = np.random.default_rng(4)
    rows = rng.standard_normal((3, 25))
    rows[1] = 0.0
    found = _normalized(rows)
    assert np.all(found[1] == 0.0)
    for k in (0, 2):
        length = math.sqrt(math.fsum(v * v for v in rows[k]))
        assert np.allclose(found[k], rows[k] / length, rtol=1e-15, atol=0)
        assert math.fsum(v * v for v in found[k]) == pytest.approx(1.0, rel=1e-14)


def test_compare_takes_lists_and_plain_numbers_as_arrays():
    expected, actual = [[1.0, 2.0]], np.array([[1.0, 2.5]])
    as_lists = compare("c", "reverse", "numerical", 0, 0, expected, actual, 1)
    as_arrays = compare("c", "reverse", "numerical", 0, 0, np.array(expected), actual,
                        np.array(1.0))
    assert as_lists.to_dict() == as_arrays.to_dict()
    assert as_lists.passed and as_lists.max_error == 0.5 and as_lists.where == (0, 1)
    failed = compare("c", "reverse", "numerical", 0, 0, expected, actual, np.float32(0.25))
    assert not failed.passed and failed.tolerance == 0.25


def test_a_jacobian_compared_with_itself_has_torchs_tolerance_at_its_first_entry():
    layout = Layout({0: (2,)}, {0: False}, {0: (1,)}, {0: False})
    for first, tol in ((-3.0, 1e-5 + 1e-3 * 3.0), (np.nan, math.inf), (np.inf, math.inf)):
        jac = Jacobian("reverse", layout, {(0, 0): np.array([[first, 1.0]])})
        result = _compared_with_itself("reentrant", jac, 0, 0, 1e-5, 1e-3)
        assert result.passed and result.max_error == 0.0 and result.where == (0, 0)
        assert type(result.tolerance) is float and result.tolerance == tol


def test_projection_layout_is_made_once_per_layout():
    layout = Layout({0: (3, 2), 2: (4,)}, {0: True, 2: False}, {1: (5,)}, {1: False})
    first = projection_layout(layout)
    assert projection_layout(layout) is first
    assert [first.in_size(i) for i in (0, 2)] == [1, 1] and first.out_size(1) == 1
    assert not any(first.in_complex.values()) and not any(first.out_complex.values())
