"""The memory budget and the Jacobian plan as options, and torch's vmap for evaluations."""
from __future__ import annotations

import numpy as np
import pytest

from adcheck.gradcheck.core import budget
from adcheck.gradcheck import check
from adcheck.gradcheck.core.options import Options


@pytest.mark.parametrize("keywords, message", [
    ({"memory_budget": 1000}, r"memory_budget must be a number of bytes >= 1048576"),
    ({"memory_budget": 2.5e9}, r"memory_budget must be a number of bytes"),
    ({"jacobian": "sparse"}, r"jacobian must be one of auto, dense, compressed, probed"),
    ({"jacobian": "probed", "reference": lambda x: x}, r"an mpmath reference gives whole"),
])
def test_bad_budget_and_plan_options_are_refused(keywords, message):
    with pytest.raises(ValueError, match=message):
        Options.from_keywords(**keywords)


def test_batches_and_chunks_follow_the_budget():
    # 2**20 bytes, a quarter each, 8 bytes a coordinate: 32768 coordinates a share
    assert budget.batch_size(2**20, 512, copies=8) == 8
    assert budget.chunk_columns(2**20, 1024, copies=4) == 8
    assert list(budget.chunks(10, 4)) == [(0, 4), (4, 8), (8, 10)]
    assert budget.fits(2**20, 2**14, copies=8) and not budget.fits(2**20, 2**14 + 1, copies=8)


def test_the_plan_is_dense_until_the_blocks_are_large():
    import adcheck.refengine as E
    small = E.from_numpy(np.linspace(0.1, 1, 50)).requires_grad_()
    large = E.from_numpy(np.linspace(0.1, 1, 2000)).requires_grad_()
    assert check(E.sin, (small,), seed=0).plan == "dense"
    assert check(E.sin, (large,), seed=0).plan == "compressed"
    assert check(E.sin, (large,), seed=0, jacobian="dense").plan == "dense"
    assert check(E.sin, (small,), seed=0, jacobian="compressed").plan == "compressed"


def test_the_runner_carries_the_budget_in_the_runs_options():
    # a check's own keywords say what the check is; the budget is the run's
    from adcheck.gradcheck.core.budget import DEFAULT_BUDGET
    from adcheck.runner.policy import Policy, options
    assert "memory_budget" not in options("reverse", Policy(memory_budget=2**26))
    assert Policy(memory_budget=2**26).options().memory_budget == 2**26
    assert Policy().options().memory_budget == DEFAULT_BUDGET


def test_torch_functions_are_evaluated_in_vmapped_batches():
    torch = pytest.importorskip("torch")
    x = torch.linspace(0.1, 1.0, 6, dtype=torch.float64, requires_grad=True)
    report = check(torch.sin, (x,), seed=0)
    assert report.passed
    assert report.batching["fallback"] is None
    # 12 perturbed points (and the rows, one batched backward) in a few calls
    assert report.counts["function"] >= 12 and report.batching["batched_calls"] <= 4


def test_a_torch_function_vmap_cannot_run_is_looped_and_the_report_says_why():
    torch = pytest.importorskip("torch")
    x = torch.linspace(0.1, 1.0, 6, dtype=torch.float64, requires_grad=True)

    def reads_a_number(t):
        return t * float(t.sum().item() > 0)      # .item() has no batching rule

    report = check(reads_a_number, (x,), seed=0)
    assert report.passed
    assert "under vmap raised" in report.batching["fallback"]
    assert "one vector at a time" in report.batching["fallback"]
