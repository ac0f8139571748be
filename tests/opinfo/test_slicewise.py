"""``opinfo.entrywise.slicewise``: a reduction's reference computes each distinct
slice once, with results identical to calling it on every slice.

Checked against the reduction's function called directly in mpmath (the
reference's own definition of var), entry for entry, and by counting the
calls a reference Jacobian makes.
"""
from __future__ import annotations

import mpmath
import numpy as np

from adcheck.opinfo.definitions.reduction import _mp_var, mp_reduce
from adcheck.opinfo.entrywise import slicewise
from adcheck.gradcheck.numerics.reference import to_mp


def test_the_same_values_as_each_slice_computed():
    x = to_mp(np.random.default_rng(3).uniform(-2, 2, (2, 3, 2)))
    with mpmath.workdps(60):
        got = mp_reduce(_mp_var)(x, dim=1, correction=0)
        for i in range(2):
            for k in range(2):
                assert got[i, k] == _mp_var(list(x[i, :, k]), correction=0)


def test_a_moved_coordinate_recomputes_its_slice_alone():
    calls = []

    def fsum(values):
        calls.append(len(values))
        return mpmath.fsum(values)
    ref = mp_reduce(fsum)
    x = to_mp(np.arange(12.0).reshape(4, 3))
    with mpmath.workdps(60):
        ref(x, dim=1)
        assert len(calls) == 4
        moved = x.copy()
        moved[2, 1] = moved[2, 1] + mpmath.mpf(10) ** -22
        out = ref(moved, dim=1)
        assert len(calls) == 5   # (row 2 alone)
        assert out[2] == mpmath.fsum(list(moved[2]))
        assert out[2] != mpmath.fsum(list(x[2]))


def test_the_working_precision_and_types_are_part_of_the_key():
    kept = slicewise(lambda v: mpmath.fsum(v) / 3)
    values = [mpmath.mpf(1), mpmath.mpf(2), mpmath.mpf(2)]
    with mpmath.workdps(15):
        low = kept(values)
    with mpmath.workdps(60):
        high = kept(values)
        assert high == mpmath.mpf(5) / 3
    assert low != high
    assert isinstance(kept([mpmath.mpc(1), mpmath.mpc(2), mpmath.mpc(2)]), mpmath.mpc)
