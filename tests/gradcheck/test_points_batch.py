"""A first derivative's finite differences: the points of all its inputs in one
vmapped call (``gradcheck.core.points``), with the same outputs as one call
per input and as the loop.

The oracle is the first derivative written out in the test: for
f(x, y) = sin(x) * y and grad_output g, the gradients are
(g y cos x, g sin x).
"""
from __future__ import annotations

import numpy as np
import pytest

import adcheck.refengine as E
from adcheck.refengine.batching.batched import BatchedTensor
from adcheck.gradcheck.core.batching import batched
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.numerical import central_blocks
from adcheck.gradcheck.core.problem import Problem
from adcheck.gradcheck.core.secondorder import first_derivative

X = np.array([0.3, -1.1, 0.7])
Y = np.array([1.5, 0.2, -0.4])


def _evaluator(func=lambda x, y: E.sin(x) * y):
    x, y = (E.from_numpy(a.copy()).requires_grad_() for a in (X, Y))
    first, inputs = first_derivative(func, (x, y), None, np.random.default_rng(0))
    return Evaluator(Problem(first, inputs, order=2))


def _written_out(x, y, g) -> tuple:
    return g * y * np.cos(x), g * np.sin(x)


def _points(ev) -> dict:
    """Three points of each input: the given inputs with that one moved."""
    moves = np.linspace(-0.2, 0.3, 3)[:, None]
    return {i: ev.problem.arrays[i] + moves for i in ev.problem.diff_in}


def test_the_points_of_every_input_are_one_call_with_each_ones_outputs():
    ev = _evaluator()
    points = _points(ev)
    before = dict(ev.problem.counts), ev.problem.batching["batched_calls"]
    with batched(True):
        found = ev.outputs_at_each(points, {i: f"input {i}" for i in points})
    assert ev.problem.batching["batched_calls"] == before[1] + 1
    assert ev.problem.counts["function"] == before[0]["function"] + 9
    base = [ev.problem.arrays[i] for i in range(3)]
    for i, moved in points.items():
        for k, point in enumerate(moved):
            at = list(base)
            at[i] = point
            dx, dy = _written_out(*at)
            np.testing.assert_allclose(found[i][0][k], dx, rtol=1e-13, atol=1e-15)
            np.testing.assert_allclose(found[i][1][k], dy, rtol=1e-13, atol=1e-15)


def test_one_call_gives_the_loops_outputs_bit_for_bit_on_elementwise_math():
    ev, loop = _evaluator(), _evaluator()
    points = _points(ev)
    with batched(True):
        together = ev.outputs_at_each(points, {i: f"input {i}" for i in points})
    with batched(False):
        alone = loop.outputs_at_each(points, {i: f"input {i}" for i in points})
    assert loop.problem.batching["batched_calls"] == 0
    for i in points:
        for o in together[i]:
            np.testing.assert_array_equal(together[i][o], alone[i][o])


def test_the_numerical_jacobian_of_a_first_derivative_is_its_derivative():
    ev = _evaluator()
    with batched(True):
        jac = central_blocks(ev, 1e-6)
    x, y, g = (ev.problem.arrays[i] for i in range(3))
    # d(g y cos x)/dx = -g y sin x, /dy = g cos x, /dg = y cos x; d(g sin x)/dx =
    # g cos x, /dy = 0, /dg = sin x: diagonal blocks
    expected = {(0, 0): -g * y * np.sin(x), (0, 1): g * np.cos(x), (0, 2): y * np.cos(x),
                (1, 0): g * np.cos(x), (1, 1): 0 * x, (1, 2): np.sin(x)}
    for key, diagonal in expected.items():
        np.testing.assert_allclose(jac.blocks[key], np.diag(diagonal), atol=1e-8)


def test_an_in_place_change_in_the_one_call_is_recorded_as_a_mutation():
    def writes(x, y):
        if isinstance(x, BatchedTensor):   # only in a vmapped call: this one is seen
            with E.no_grad():
                y.add_(1.0)
        return E.sin(x) + y
    ev = _evaluator(writes)
    points = _points(ev)
    with batched(True):
        ev.outputs_at_each(points, {i: f"input {i}" for i in points})
    who, what, change, _ = ev.problem.mutations[1]
    assert "9 points at once" in what and change == 1.0


@pytest.mark.parametrize("fails", [False, True], ids=["maps", "raises under vmap"])
def test_a_call_that_raises_under_vmap_falls_back_to_each_input(fails):
    def func(x, y):
        if fails and isinstance(x, BatchedTensor):
            raise RuntimeError("no batching here")
        return E.sin(x) * y
    ev = _evaluator(func)
    points = _points(ev)
    with batched(True):
        found = ev.outputs_at_each(points, {i: f"input {i}" for i in points})
    assert (ev.problem.batching["fallback"] is not None) == fails
    base = [ev.problem.arrays[i] for i in range(3)]
    for i, moved in points.items():
        at = list(base)
        at[i] = moved[1]
        np.testing.assert_allclose(found[i][1][1], _written_out(*at)[1], rtol=1e-13)


def test_a_zero_dimensional_input_is_batched_too():
    # the grad_output of a sum is a 0-d tensor: example 0 of its batch is a scalar
    x = E.from_numpy(X.copy()).requires_grad_()
    first, inputs = first_derivative(E.sum, (x,), None, np.random.default_rng(0))
    ev = Evaluator(Problem(first, inputs, order=2))
    points = {0: X + np.linspace(-0.2, 0.3, 3)[:, None], 1: np.array([0.5, -2.0])}
    with batched(True):
        found = ev.outputs_at_each(points, {i: f"input {i}" for i in points})
    assert ev.problem.batching["fallback"] is None
    assert ev.problem.batching["batched_calls"] == 1
    g = ev.problem.arrays[1]
    # the gradient of sum is g at every element, whatever x is
    np.testing.assert_array_equal(found[0][0], np.full((3, 3), g))
    np.testing.assert_array_equal(found[1][0], np.array([[0.5] * 3, [-2.0] * 3]))
