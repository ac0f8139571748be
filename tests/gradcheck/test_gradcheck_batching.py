"""Batching changes how fast a check runs, never what it finds.

Every formula of the zoo, right and wrong, is checked twice with the same
seed: Jacobians built in batches (one vmapped evaluation, one batched
backward, one batched forward pass) and one vector at a time. The verdicts,
the failing checks, the diagnoses and the Jacobians must agree.
"""
from __future__ import annotations

import gradcheck_zoo as zoo
import numpy as np
import pytest

from adcheck.gradcheck import check
from adcheck.gradcheck.core.batching import batching_enabled, set_batching

OPTIONS = {"default": {}, "forward": {"check_forward_ad": True},
           "adjoint": {"check_forward_ad": True}, "precise": {"precise": True},
           "gradgrad": {"order": 2}}

# noisy and nondeterministic formulas give different numbers on every call
ENTRIES = [e for e in zoo.bugs() + zoo.correct()
           if "noisy" not in e.name and "nondeterministic" not in e.name]


@pytest.fixture
def batching():
    """Run the test's checks with batching on and off; restores the setting."""
    before = batching_enabled()

    def run(enabled, *args, **kwargs):
        set_batching(enabled)
        try:
            return check(*args, **kwargs)
        finally:
            set_batching(before)
    return run


def _outcome(report) -> list:
    return [(r.check, r.mode, r.out_idx, r.in_idx, r.passed, r.diagnosis) for r in report.results]


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
def test_batched_and_looped_checks_agree(E, entry, batching):
    f, inputs = entry.build(E), entry.inputs(E)
    options = OPTIONS.get(entry.caught_by, {"check_forward_ad": True})
    batched = batching(True, f, inputs, seed=0, **options)
    looped = batching(False, f, inputs, seed=0, **options)
    assert batched.passed == looped.passed
    assert batched.diagnosis == looped.diagnosis
    assert _outcome(batched) == _outcome(looped)
    assert batched.jacobians.keys() == looped.jacobians.keys()
    for mode, jac in batched.jacobians.items():
        for key, block in jac.blocks.items():
            np.testing.assert_allclose(block, looped.jacobians[mode].blocks[key], rtol=1e-9,
                                       atol=1e-12, err_msg=f"{mode} {key}")
    assert looped.batching["batched_calls"] == 0
    assert batched.batching["batched_calls"] > 0, batched.batching


def test_refengine_functions_batch_without_falling_back(batching):
    import adcheck.refengine as E
    x = E.from_numpy(np.linspace(0.2, 1.4, 6).reshape(2, 3)).requires_grad_()
    w = E.from_numpy(np.linspace(-1, 1, 12).reshape(3, 4)).requires_grad_()
    # (explore=False: the counts compared are the given inputs' evaluations; the quick
    # pass's tally carries its seconds)
    report = batching(True, lambda x, w: (x.exp() @ w).softmax(-1), (x, w), precise=True,
                      check_forward_ad=True, seed=0, explore=False)
    assert report.passed
    assert report.batching["fallback"] is None
    assert report.batching["looped_ops"] == {}
    looped = batching(False, lambda x, w: (x.exp() @ w).softmax(-1), (x, w), precise=True,
                      check_forward_ad=True, seed=0, explore=False).counts
    # the same evaluations, but for the vectors that ride in the first reverse
    # batch (two of the scaling check and the undefined gradient's zero on the one
    # output): the reentrancy repeat carries them again, to be batched alike
    assert report.counts == dict(looped, vjp=looped["vjp"] + 3)
