"""``opinfo.entrywise``: an entrywise mpmath reference computes each distinct
entry once, and gives exactly what mpmath gives entry by entry.

The independent side is mpmath itself, called on each entry at the same
working precision; the counts are of the calls the wrapped function receives.
"""
from __future__ import annotations

import mpmath
import numpy as np

from adcheck.gradcheck.numerics.reference import WORK_DPS, mp_column, reference_jacobian, to_mp
from adcheck.opinfo.entrywise import entrywise


def _counted(fn):
    calls = []

    def counted(*args, **kwargs):
        calls.append((mpmath.mp.dps, args))
        return fn(*args, **kwargs)
    return counted, calls


def test_values_are_mpmaths_entry_by_entry_at_the_working_precision():
    x = to_mp(np.array([[0.3, -1.7, 2.5], [0.3, 4.0, -0.0]]))
    ref = entrywise(mpmath.exp)
    for dps in (15, 60, 15):    # the same entries again at another precision: computed anew
        with mpmath.workdps(dps):
            got = ref(x)
            expected = np.array([[mpmath.exp(v) for v in row] for row in x], dtype=object)
            # (the result carries the working precision: 0.3's exp to dps digits)
            assert abs(got[0, 0] - mpmath.exp(x[0, 0])) <= mpmath.eps * abs(got[0, 0])
        assert got.shape == x.shape and got.dtype == object
        assert (got == expected).all()


def test_binary_broadcasts_as_vectorize_and_keeps_arguments_apart():
    x = to_mp(np.array([[1.0], [2.0]]))
    y = to_mp(np.array([0.5, 3.0, 0.5]))
    ref = entrywise(lambda a, b: mpmath.power(a, b))
    with mpmath.workdps(40):
        got = ref(x, y)
        expected = np.vectorize(mpmath.power, otypes=[object])(x, y)
    assert got.shape == (2, 3) and (got == expected).all()


def test_types_of_equal_values_are_kept_apart():
    ref = entrywise(lambda v: type(v).__name__)
    values = np.array([2, 2.0, mpmath.mpf(2), mpmath.mpc(2), 2], dtype=object)
    assert list(ref(values)) == ["int", "float", "mpf", "mpc", "int"]


def test_an_unhashable_argument_is_computed_each_time():
    fn, calls = _counted(lambda v: len(v))
    ref = entrywise(fn)
    values = np.empty(3, dtype=object)
    values[:] = [[1], [1, 2], [1]]
    assert list(ref(values)) == [1, 2, 1] and len(calls) == 3


def test_a_reference_jacobian_calls_each_moved_entry_once_and_is_unchanged():
    """The reference check's differences (``mp_column``): 2 n calls of n entries,
    of which 2 n moved ones; the rest are the given point's, computed once."""
    import adcheck.refengine as E
    x = E.tensor([0.25, -0.5, 0.75, 0.1], dtype=E.float64, requires_grad=True)
    fn, calls = _counted(mpmath.erfinv)
    cached = reference_jacobian(entrywise(fn), (x,))
    plain = reference_jacobian(np.vectorize(mpmath.erfinv, otypes=[object]), (x,))
    assert np.array_equal(cached.blocks[0, 0], plain.blocks[0, 0])
    # the independent side: d/dx erfinv(x) = sqrt(pi) / 2 * exp(erfinv(x)^2)
    with mpmath.workdps(30):
        exact = [float(mpmath.sqrt(mpmath.pi) / 2 * mpmath.exp(mpmath.erfinv(v) ** 2))
                 for v in x.detach().numpy()]
    assert np.allclose(np.diag(cached.blocks[0, 0]), exact, rtol=1e-14, atol=0)
    n, work = 4, [c for c in calls if c[0] == WORK_DPS]   # (the differences' calls)
    assert len(work) == n + 2 * n    # the point once, each moved entry once: not 2 n * n


def test_mp_column_sees_a_fresh_entry_after_a_move():
    """A kept entry is never handed out for a moved one: the column of one
    coordinate is the derivative there and zero elsewhere."""
    from types import SimpleNamespace
    x = np.array([0.2, 0.4])
    problem = SimpleNamespace(arrays={0: x}, inputs=(None,), float_out=[0], name="f",
                              layout=SimpleNamespace(in_complex={0: False},
                                                     out_complex={0: False},
                                                     out_size=lambda o: 2,
                                                     out_shapes={0: (2,)}),
                              outputs=(None,))
    column = mp_column(problem, entrywise(mpmath.sin), 0, 1)
    assert column[0][0] == 0
    with mpmath.workdps(60):   # (the column is at reference.WORK_DPS digits)
        assert abs(column[0][1] - mpmath.cos(mpmath.mpf(0.4))) < 1e-30
