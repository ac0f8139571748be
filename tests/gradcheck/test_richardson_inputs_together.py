"""Richardson's evaluations of every input of a first derivative in the same
calls (``gradcheck.numerics.together``).

Each case compares against the same extrapolation with each input evaluated
in calls of its own (as before: ``together`` replaced by one input after
another), bit for bit, and against the derivative in closed form: for
f(x, y) = sin(x) * y and grad_output g the first derivative is
(g y cos x, g sin x), whose Jacobian is written out below.
"""
from __future__ import annotations

import numpy as np

import adcheck.refengine as E
from adcheck.gradcheck.core import evaluation
from adcheck.gradcheck.core.batching import batched
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.problem import Problem
from adcheck.gradcheck.core.secondorder import first_derivative
from adcheck.gradcheck.numerics import quotients, richardson_jacobian

X = np.array([0.3, -1.1, 0.7, 1.9])
Y = np.array([1.5, 0.2, -0.4, 0.8])


def _first(func):
    x, y = (E.from_numpy(a.copy()).requires_grad_() for a in (X, Y))
    first, inputs = first_derivative(func, (x, y), None, np.random.default_rng(0))
    return Evaluator(Problem(first, inputs, order=2))


def _alone(ev, works):
    return {i: quotients.evaluated(ev, work) for i, work in works.items()}


def _run(monkeypatch, ev, alone: bool):
    """Richardson's Jacobian of ``ev``'s problem, the batched calls and the
    evaluations it made."""
    p = ev.problem
    calls, points = p.batching["batched_calls"], p.counts["function"]
    with monkeypatch.context() as m, batched(True):
        if alone:
            m.setattr(richardson_jacobian, "together", _alone)
        jac = richardson_jacobian.richardson_blocks(ev)
    return jac, p.batching["batched_calls"] - calls, p.counts["function"] - points


def _same(a, b):
    assert sorted(a.blocks) == sorted(b.blocks)
    for key in a.blocks:
        assert a.blocks[key].tobytes() == b.blocks[key].tobytes()
        assert a.errors[key].tobytes() == b.errors[key].tobytes()
    assert (a.unresolved or {}).keys() == (b.unresolved or {}).keys()


def _written_out(g):
    """The first derivative's Jacobian by (output, input): d(g y cos x), d(g sin x)."""
    c, s = np.cos(X), np.sin(X)
    return {(0, 0): np.diag(-g * Y * s), (0, 1): np.diag(g * c), (0, 2): np.diag(Y * c),
            (1, 0): np.diag(g * c), (1, 1): np.zeros((4, 4)), (1, 2): np.diag(s)}


def test_a_binary_ops_inputs_share_their_calls_with_the_same_bits(monkeypatch):
    func = lambda x, y: E.sin(x) * y   # noqa: E731
    together, calls, points = _run(monkeypatch, _first(func), alone=False)
    alone, alone_calls, alone_points = _run(monkeypatch, _first(func), alone=True)
    _same(together, alone)
    assert points == alone_points   # (the same points)
    # three inputs of 4 columns: x takes the first levels, then levels 2, 3 with
    # its sentinels; y and g (the derivative is linear in them) the first levels
    # alone: 4 calls alone, and together one per phase
    assert (calls, alone_calls) == (2, 4)
    g = _first(func).problem.arrays[2]
    for key, expected in _written_out(g).items():
        np.testing.assert_allclose(together.blocks[key], expected, rtol=1e-9, atol=1e-12)


def test_a_call_that_raises_for_the_inputs_together_falls_back(monkeypatch):
    # the points of all inputs raise under vmap (one input's would): each input's
    # evaluations then go alone, as before, and batching stays on
    made = evaluation.mapped_points

    def raising(p, points):
        if len(points) > 1:
            raise RuntimeError("not together")
        return made(p, points)
    func = lambda x, y: E.sin(x) * y   # noqa: E731
    alone, alone_calls, _ = _run(monkeypatch, _first(func), alone=True)
    with monkeypatch.context() as m:
        m.setattr(evaluation, "mapped_points", raising)
        ev = _first(func)
        fallen, calls, _ = _run(monkeypatch, ev, alone=False)
    _same(fallen, alone)
    assert calls == alone_calls
    assert ev.problem.batching["fallback"] is None


def test_a_function_that_does_not_differentiate_inside_goes_input_by_input(monkeypatch):
    # only the moved input is batched in its own call: the inputs are not put together
    def evaluator():
        x, y = (E.from_numpy(a.copy()).requires_grad_() for a in (X, Y))
        return Evaluator(Problem(lambda a, b: E.sin(a) * b, (x, y)))
    together, calls, _ = _run(monkeypatch, evaluator(), alone=False)
    alone, alone_calls, _ = _run(monkeypatch, evaluator(), alone=True)
    _same(together, alone)
    assert calls == alone_calls
    np.testing.assert_allclose(together.blocks[0, 0], np.diag(Y * np.cos(X)), rtol=1e-9)
    np.testing.assert_allclose(together.blocks[0, 1], np.diag(np.sin(X)), rtol=1e-9)
