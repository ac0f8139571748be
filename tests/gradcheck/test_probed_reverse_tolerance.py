"""A probed check's reverse tolerance is one formula, whole or streamed.

Reverse mode compares ``W^T A U`` with ``W^T (J U)`` within ``|w|^T`` times the
cells' own tolerances plus the rounding of the sum (``probed.projection_tolerance``).
A check whose cells do not fit in its budget sums the projection a chunk of
probe columns at a time (``probestream``); the tolerance it reaches must be the
one the whole check states, to rounding, precise or with atol and rtol.
"""
from __future__ import annotations

import numpy as np
import pytest

import adcheck.refengine as E
from adcheck.gradcheck import check

SIZE = 6_000   # 12 copies of 6,000 cells by 2 directions: beyond 1 MiB, within 512


def _reverse(report) -> list:
    return [r for r in report.results if r.check == "reverse" and r.mode == "reverse"]


@pytest.mark.parametrize("precise", [True, False])
def test_the_streamed_reverse_tolerance_is_the_whole_checks(precise):
    x = E.from_numpy(np.random.default_rng(3).uniform(0.5, 1.5, SIZE)).requires_grad_()
    options = dict(precise=precise, jacobian="probed", probes=2, seed=0, check_scaling=False,
                   check_adjoint=False)
    found = {}
    for budget in (2**20, 512 * 2**20):
        report = check(E.sin, (x,), memory_budget=budget, **options)
        assert report.passed, report.message()
        found[budget] = report
    assert "chunks of probe columns" in found[2**20].coverage["numerical"]
    assert "chunks of probe columns" not in found[512 * 2**20].coverage["numerical"]
    streamed, whole = _reverse(found[2**20]), _reverse(found[512 * 2**20])
    assert len(streamed) == len(whole) == 1
    # the same cells differenced the same way: the same tolerance where the error peaks
    assert streamed[0].where == whole[0].where
    assert streamed[0].tolerance == pytest.approx(whole[0].tolerance, rel=1e-9)
