"""The evaluation layer: stacked outputs, vjps and jvps, batched or looped
inside, and vectors prefetched for a later check.

The oracle for every stacked result is the same evaluation made one vector
at a time (``vjp``, ``jvp``, ``evaluate``), whose formulas are known: for
f(x) = (sin x, x * x) the vjp of (g0, g1) is g0 cos x + 2 g1 x.
"""
from __future__ import annotations

import gradcheck_zoo as zoo
import numpy as np
import pytest

from adcheck.gradcheck import GradcheckError
from adcheck.gradcheck.core.batching import batching_enabled, set_batching
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.problem import Problem

X = np.array([0.3, -1.1, 0.7])


@pytest.fixture(params=[True, False], ids=["batched", "looped"])
def batching(request):
    before = batching_enabled()
    set_batching(request.param)
    yield request.param
    set_batching(before)


def evaluator(E, func=None):
    func = func or (lambda x: (E.sin(x), x * x))
    return Evaluator(Problem(func, (E.from_numpy(X.copy()).requires_grad_(),)))


def test_vjps_are_stacked_and_equal_the_formula(E, batching):
    ev = evaluator(E)
    vectors = np.random.default_rng(0).standard_normal((4, 3))
    stacked = ev.vjps(0, vectors, "vjps")[0]
    assert stacked.shape == (4, 3)
    np.testing.assert_allclose(stacked, vectors * np.cos(X), rtol=1e-12)
    assert ev.problem.counts["vjp"] == 4
    assert (ev.problem.batching["batched_calls"] > 0) == batching


def test_jvps_give_every_float_output_and_zeros_for_an_output_without_tangent(E, batching):
    ev = evaluator(E, lambda x: (x * x, E.from_numpy(np.ones(2))))
    tangents = np.eye(3)
    stacked = ev.jvps(0, tangents, "jvps")
    np.testing.assert_allclose(stacked[0], np.diag(2 * X), rtol=1e-12)
    assert stacked[1].shape == (3, 2) and not stacked[1].any()


def test_outputs_at_many_points_of_one_input(E, batching):
    ev = evaluator(E)
    points = X + np.linspace(0, 1, 5)[:, None]
    outs = ev.outputs_at(0, points, "points")
    np.testing.assert_allclose(outs[0], np.sin(points), rtol=1e-12)
    np.testing.assert_allclose(outs[1], points * points, rtol=1e-12)
    assert ev.outputs_at(0, np.zeros((0, 3)), "none")[0].shape == (0, 3)


def test_prefetched_vectors_ride_along_and_are_served_once(E, batching):
    ev = evaluator(E)
    extra = np.array([[0.5, -2.0, 1.5], [1.0, 0.25, -3.0]])
    ev.prefetch("vjp", 0, list(extra))
    ev.vjps(0, np.eye(3), "rows")
    counted = ev.problem.counts["vjp"]
    served = ev.vjps(0, extra, "later")[0]
    np.testing.assert_allclose(served, extra * np.cos(X), rtol=1e-12)
    # batched: computed when the rows were, served without a call; looped: computed now
    assert ev.problem.counts["vjp"] == counted + (0 if batching else 2)
    ev.vjps(0, extra, "again")
    assert ev.problem.counts["vjp"] == counted + (2 if batching else 4)


def test_rows_asked_for_are_computed_alike_whether_or_not_vectors_were_prefetched(E):
    # reentrancy compares two computations of the same rows: a vmapped product
    # rounds differently in a batch with other companions (the op_db survey:
    # ormqr complex128 differed by 1.1e-16 between batches of 25 and 28 rows), so
    # prefetched vectors never share the batch of the rows asked for
    # (and fast mode's one probe of torch.matmul on 32x32 differed by 2.8e-17 from
    # its batch with the scaling probes)
    rng = np.random.default_rng(3)
    a, b = (E.from_numpy(rng.standard_normal((32, 32))).requires_grad_() for _ in range(2))
    ev = Evaluator(Problem(lambda x, y: x @ y, (a, b)))
    for rows in (1, 3):
        vectors = rng.standard_normal((rows, 32, 32))
        ev.prefetch("vjp", 0, list(rng.standard_normal((2, 32, 32))))
        first = ev.vjps(0, vectors, "rows")
        again = ev.vjps(0, vectors, "rows again")
        assert all(np.array_equal(first[i], again[i]) for i in (0, 1))


def test_riding_vectors_share_the_first_batch_and_its_repeat_is_batched_alike(E):
    # inside riding(), prefetched vectors join the batch of the rows (one call
    # fewer); riding(again=True) gives the repeat the same companions, so the rows
    # are computed alike both times (the case above: a BLAS may round a 32x32
    # matmul's rows differently with other companions)
    rng = np.random.default_rng(3)
    a, b = (E.from_numpy(rng.standard_normal((32, 32))).requires_grad_() for _ in range(2))
    ev = Evaluator(Problem(lambda x, y: x @ y, (a, b)))
    vectors, extra = rng.standard_normal((3, 32, 32)), rng.standard_normal((2, 32, 32))
    ev.prefetch("vjp", 0, list(extra))
    calls = ev.problem.batching["batched_calls"]
    with ev.riding():
        first = ev.vjps(0, vectors, "rows")
    assert ev.problem.batching["batched_calls"] == calls + 1
    before = ev.problem.counts["vjp"]
    with ev.riding(again=True):
        again = ev.vjps(0, vectors, "rows again")
    assert ev.problem.counts["vjp"] == before + 3 + 2   # the rows and their riders again
    assert ev.problem.batching["batched_calls"] == calls + 2
    assert all(np.array_equal(first[i], again[i]) for i in (0, 1))
    # the riders, served from the first batch without a call: d(g . x y)/dx = g y^T
    counted = ev.problem.counts["vjp"]
    served = ev.vjps(0, extra, "later")
    assert ev.problem.counts["vjp"] == counted
    b_np = b.detach().numpy()
    np.testing.assert_allclose(served[0], extra @ b_np.T, rtol=1e-12, atol=1e-12)
    # the rows themselves, against the same formula
    np.testing.assert_allclose(first[0], vectors @ b_np.T, rtol=1e-12, atol=1e-12)


def test_equal_prefetched_vectors_are_each_served(E):
    ev = evaluator(E)
    zero = np.zeros(3)
    ev.prefetch("vjp", 0, [zero, zero])
    ev.vjps(0, np.eye(3), "rows")
    before = ev.problem.counts["vjp"]
    ev.vjps(0, np.stack([zero, zero]), "both")
    assert ev.problem.counts["vjp"] == before


def test_a_batch_that_raises_falls_back_to_the_loop_which_reports_per_vector():
    from adcheck import refengine
    ev = evaluator(refengine, zoo.reads_its_tangent(refengine))
    stacked = ev.jvps(0, np.eye(3), "the columns", "column {k}")
    np.testing.assert_allclose(stacked[0], 2 * np.eye(3))
    assert "the columns under vmap raised" in ev.problem.batching["fallback"]
    assert "every jvp evaluation ran one vector at a time" in ev.problem.batching["fallback"]
    broken = evaluator(refengine, zoo.no_jvp(refengine))
    with pytest.raises(GradcheckError, match="forward-mode AD raised .* while column 0"):
        broken.jvps(0, np.eye(3), "the columns", "column {k}")


def test_the_engines_own_batch_has_no_fallback():
    from adcheck import refengine
    ev = evaluator(refengine, zoo.reads_its_tangent(refengine))
    with pytest.raises(Exception, match="vmap"):
        ev.engine_batch("jvp", 0, np.eye(3))
    assert ev.problem.counts["jvp"] == 1


def test_a_batch_of_the_wrong_shape_falls_back_to_the_loop():
    # torch's legacy vmap (the batching its forward AD supports) gives matmul's jvp
    # of a 1-D input an extra dimension; each column alone has the right shape
    torch = pytest.importorskip("torch")
    x = torch.tensor(X, requires_grad=True)
    w = torch.tensor([[0.4, -0.9], [1.5, 0.2], [-0.6, 0.7]], dtype=torch.float64)
    ev = Evaluator(Problem(torch.matmul, (x, w)))
    stacked = ev.jvps(0, np.eye(3), "the columns", "column {k}")
    np.testing.assert_array_equal(stacked[0], w.numpy())    # d(x @ w)/dx_k = w[k]
    assert "the columns under vmap raised GradcheckError" in ev.problem.batching["fallback"]


def test_a_jvp_of_the_wrong_shape_is_still_reported(batching):
    # (refengine itself refuses the misshapen tangent; batched or not, it is an error)
    from adcheck import refengine
    f = zoo.function(refengine, "Flat", lambda E, x: E.sin(x), lambda E, x, g: g * E.cos(x),
                     lambda E, x, t: (t * E.cos(x)).reshape(1, -1)).apply
    with pytest.raises(GradcheckError, match="Flat: forward-mode AD raised .* column 0"):
        evaluator(refengine, f).jvps(0, np.eye(3), "the columns", "column {k}")
