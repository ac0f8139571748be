"""The engine adapters: detection, and every check on plain ops of each engine.

The ops are the engines' own; the oracle for 'correct' is torch (whose
formulas torch's own gradcheck accepts) and, for refengine, the same verdict.
"""
from __future__ import annotations

import gradcheck_zoo as zoo
import numpy as np
import pytest
from gradcheck_support import load_engine

from adcheck.gradcheck import GradcheckError, check, gradcheck, gradgradcheck
from adcheck.gradcheck.engines import engine_for


def leaf(E, values):
    return E.from_numpy(np.array(values)).requires_grad_()


def test_engine_is_taken_from_the_inputs(E):
    adapter = engine_for((1.0, leaf(E, [1.0]), "text"))
    assert adapter.name == E.__name__.rpartition(".")[2] and adapter.module is E


def test_mixing_engines_is_refused():
    torch, refengine = load_engine("torch"), load_engine("refengine")
    with pytest.raises(ValueError, match="mix refengine and torch"):
        engine_for((leaf(torch, [1.0]), leaf(refengine, [1.0])))


CASES = [
    ("sin", lambda E: E.sin, lambda E: (leaf(E, [0.3, -1.2, 2.0]),)),
    ("mul_complex", lambda E: E.mul, lambda E: (leaf(E, [0.3 + 1j, -1.2]),
                                                leaf(E, [0.5 - 0.2j, 2.0 + 0.1j]))),
    ("matmul", lambda E: E.matmul, lambda E: (leaf(E, [[0.3, 1.0], [-1.2, 0.4]]),
                                              leaf(E, [[0.5], [2.0]]))),
    ("abs_complex", lambda E: E.abs, lambda E: (leaf(E, [0.3 + 1j, -1.2 + 0.5j]),)),
    ("sum_dim", lambda E: (lambda x: x.sum(1)), lambda E: (leaf(E, [[0.3, 1.0], [2.0, -1.0]]),)),
]


@pytest.mark.parametrize("name,op,make", CASES, ids=[c[0] for c in CASES])
def test_plain_ops_pass_every_check(E, name, op, make):
    f, inputs = op(E), make(E)
    assert gradcheck(f, inputs, check_forward_ad=True, check_batched_grad=True,
                     check_grad_dtypes=True)
    assert gradcheck(f, inputs, fast_mode=True, check_forward_ad=True, probes=2)
    assert check(f, inputs, precise=True, check_forward_ad=True).passed
    assert gradgradcheck(f, inputs, check_fwd_over_rev=True)


def test_undefined_output_grads_reach_a_custom_backward_as_zeros_or_none(E):
    report = check(zoo.adds_constant(E), (leaf(E, [0.5, 1.5]),), check_scaling=False)
    failing = {r.check for r in report.failures}
    assert "undefined-grad" in failing


def test_batched_forward_grad_runs_on_refengine_and_names_a_jvp_that_cannot_batch():
    refengine = load_engine("refengine")
    x = leaf(refengine, [0.5, -0.3])
    assert gradcheck(refengine.sin, (x,), check_forward_ad=True, check_batched_forward_grad=True)

    reads_its_tangent = zoo.reads_its_tangent(refengine)
    with pytest.raises(GradcheckError, match="check_batched_forward_grad=False"):
        gradcheck(reads_its_tangent, (x,), check_forward_ad=True, check_batched_forward_grad=True)
    # without the batched check, the same Function passes: the Jacobian
    # builders fall back to one tangent at a time, and the report says why
    report = check(reads_its_tangent, (x,), check_forward_ad=True)
    assert report.passed
    assert "vmap raised" in report.batching["fallback"]


def test_zero_second_derivative_with_rounding_noise_is_not_a_scaling_failure(E):
    # std of two elements is piecewise linear: its first derivative's Jacobian in x is
    # zero, and the vjp there is pure rounding noise, which need not scale exactly
    x = leaf(E, [[-0.38, -1.21], [-1.64, 0.32], [-0.81, 0.69]])
    assert gradgradcheck(lambda x: x.std(-1), (x,), check_fwd_over_rev=True)
    assert check(lambda x: x.std(-1), (x,), order=2, precise=True, seed=0).passed
