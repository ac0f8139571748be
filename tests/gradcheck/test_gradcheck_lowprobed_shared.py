"""The second-order checks of one sample share what a probed low-precision
check measures without its directions (``gradcheck.core.reuse.kept``): the
nearby points of the formula and its float64 run, and the float64 run's
allowance of each entry. Inside ``shared()`` reverse over reverse, then forward
over reverse, judge with the same tolerances as each check made alone, and
the second evaluates less."""
from __future__ import annotations

import numpy as np
import pytest

from adcheck.gradcheck import check
from adcheck.gradcheck.core.reuse import shared

torch = pytest.importorskip("torch")

SIDES = {"reverse": {"check_backward_ad": True},
         "forward": {"check_backward_ad": False, "check_forward_ad": True}}


def _f(x, w):
    return torch.tanh(x @ w) * x.sum()


def _inputs(dtype_name: str):
    rng = np.random.default_rng(2)
    dtype = getattr(torch, dtype_name)
    return (torch.tensor(rng.uniform(-1, 1, (2, 3)), dtype=dtype, requires_grad=True),
            torch.tensor(rng.uniform(-1, 1, (3, 2)), dtype=dtype, requires_grad=True))


def _probed(side: str, dtype_name: str):
    return check(_f, _inputs(dtype_name), precise=True, order=2, seed=7, jacobian="probed",
                 probes=8, **SIDES[side])


def _tolerances(report) -> dict:
    numerical = report.jacobians["numerical"]
    return {**{("cell",) + k: v for k, v in numerical.allowance.items()},
            **{("projected",) + k: v for k, v in (numerical.projected_allowance or {}).items()}}


@pytest.mark.parametrize("dtype_name", ["float32", "bfloat16"])
def test_shared_second_order_checks_judge_as_each_alone(dtype_name):
    alone = {side: _probed(side, dtype_name) for side in SIDES}
    with shared():
        together = {side: _probed(side, dtype_name) for side in SIDES}
    for side in SIDES:
        assert alone[side].plan == together[side].plan == "probed"
        assert alone[side].passed and together[side].passed, together[side].message()
        a, b = _tolerances(alone[side]), _tolerances(together[side])
        assert a.keys() == b.keys() and a
        for key in a:
            np.testing.assert_array_equal(a[key], b[key])
        assert alone[side].escape == together[side].escape
    # the first makes every measurement; the second reuses the points and the allowance
    assert together["reverse"].counts["function"] == alone["reverse"].counts["function"]
    assert together["forward"].counts["function"] < alone["forward"].counts["function"]
    assert together["forward"].counts["vjp"] < alone["forward"].counts["vjp"]
