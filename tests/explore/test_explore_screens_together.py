"""The quick pass's points screened together (``explore.batchscreens``).

On refengine the screens of one search's points are made in a few vmapped
calls instead of four or five calls per point. Each point's screen must be
the one made alone: the same directions from the same generator, quotients
and products equal to the last digits (and to the closed form), the same
word; a point where the batch makes NaN and the point's own call does not
is screened by its own call; a batch that raises leaves the points to be
screened one by one; a process that dies in a batch charges no point."""
from __future__ import annotations

import numpy as np
import pytest

import adcheck.refengine as E
from adcheck.gradcheck import check
from adcheck.gradcheck.core import measured
from adcheck.gradcheck.core.batching import batched
from adcheck.gradcheck.core.secondorder import first_derivative
from adcheck.gradcheck.engines import engine_for
from adcheck.gradcheck.explore import batchscreens, quick, watch
from counted import Counted

EPS = float(np.finfo(np.float64).eps)
MODES = ("reverse", "forward")


def _t(values, dtype=E.float64):
    return E.tensor(np.array(values), dtype=dtype, requires_grad=True)


def _alone(func, points, explored, seed, needs_grad=False):
    rng = np.random.default_rng(seed)
    engine = engine_for(list(points[0]))
    return [quick.first_screen(engine, func, list(p), explored, rng, EPS, needs_grad)
            for p in points]


def _together(func, points, explored, seed, needs_grad=False):
    engine = engine_for(list(points[0]))
    # (what one evaluation holds, measured as a check's Problem measures it: the batch
    # keeps every point's evaluation at once to the budget)
    measured.first_evaluation(lambda: func(*points[0]), func, tuple(points[0]), engine)
    with batched(True):
        return batchscreens.screens(engine, func, [list(p) for p in points], explored,
                                    np.random.default_rng(seed), EPS, needs_grad)


def _same(alone, together, modes=MODES, rtol=1e-12):
    assert len(alone) == len(together)
    for a, b in zip(alone, together):
        if isinstance(a, str):
            assert a == b
            continue
        assert not isinstance(b, str)
        for drawn in ("v", "u"):      # the same generator, drawn in the same order
            assert a.__dict__[drawn].keys() == b.__dict__[drawn].keys()
            for k in a.__dict__[drawn]:
                assert np.array_equal(a.__dict__[drawn][k], b.__dict__[drawn][k])
        assert (a.peak, a.step) == (b.peak, b.step)
        np.testing.assert_allclose(b.sides, a.sides, rtol=rtol, atol=1e-300)
        for mode in modes:
            assert b.formula(mode) == pytest.approx(a.formula(mode), rel=rtol, abs=1e-300)
        assert quick._verdict(a, set(modes), EPS) == quick._verdict(b, set(modes), EPS)


def _points(*arrays_per_point):
    return [[_t(a) for a in arrays] for arrays in arrays_per_point]


def test_the_screens_made_together_are_the_ones_made_alone():
    x, y = [0.3, -1.2, 2.0], [2.0, 0.5, -3.0]
    points = _points((x, y), ([0.0, 0.0, 0.0], y), (x, x), ([1e-8, -4e-8, 7e-8], y),
                     ([40.0, -160.0, 280.0], [1e-3, 0.0, 5.0]))
    _same(_alone(lambda a, b: E.sin(a) * b + E.exp(b).sum(), points, [0, 1], 3),
          _together(lambda a, b: E.sin(a) * b + E.exp(b).sum(), points, [0, 1], 3))


@pytest.mark.parametrize("name", ["matmul", "softmax", "complex", "logsumexp"])
def test_other_functions_screened_together_as_alone(name):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 3))
    func, points = {
        "matmul": (lambda p, q: p @ q, _points((a, a.T), (np.zeros((3, 3)), a), (a, a))),
        "softmax": (lambda p: E.softmax(p, -1), _points((a,), (np.zeros((3, 3)),), (a * 40,))),
        "complex": (lambda z: E.exp(z) * z.conj() + z,
                    [[_t(v, E.complex128)] for v in ([0.3 + 1j, -1.2 - 0.5j], [0j, 0j],
                                                     [1e-8j, 2e-8 + 0j])]),
        "logsumexp": (lambda p: E.logsumexp(p, 0), _points((a,), (np.ones((3, 3)),), (a * 1e-8,))),
    }[name]
    explored = list(range(len(points[0])))
    _same(_alone(func, points, explored, 5), _together(func, points, explored, 5))


def test_the_products_made_together_are_the_closed_form():
    x = np.array([[0.3, -1.2, 2.0], [0.0, 0.0, 0.0], [1e-8, 5.0, -40.0]])
    screens = _together(E.sin, [[_t(row)] for row in x], [0], 0)
    for row, screen in zip(x, screens):
        v, u = screen.v[0], screen.u[0]
        exact = float(v @ (np.cos(row) * u))
        assert screen.formula("reverse") == pytest.approx(exact, rel=1e-14, abs=1e-300)
        assert screen.formula("forward") == pytest.approx(exact, rel=1e-14, abs=1e-300)
        assert quick._verdict(screen, set(MODES), EPS) == "pass"


def test_a_first_derivative_screened_together_as_alone():
    x = _t([0.3, -1.2, 2.0])
    first, args = first_derivative(lambda a: E.sin(a) * a, (x,), None, np.random.default_rng(0))
    gos = list(args[1:])
    points = [[_t(v)] + gos for v in ([0.3, -1.2, 2.0], [0.0, 0.0, 0.0], [1e-8, 3.0, 40.0])]
    _same(_alone(first, points, [0], 2, True), _together(first, points, [0], 2, True),
          modes=("reverse",))


def test_every_point_is_screened_in_a_few_calls():
    x = np.array([[0.3, -1.2, 2.0], [0.0, 0.0, 0.0], [1e-8, 5.0, -40.0], [1.0, 1.0, 3.0],
                  [2.0, -2.0, 0.5], [7.0, 0.0, 1.0]])
    together, alone = Counted(E.sin), Counted(E.sin)
    screens = _together(together, [[_t(r)] for r in x], [0], 0)
    for screen in screens:
        quick._verdict(screen, set(MODES), EPS)
    with batched(False):
        for screen in _alone(alone, [[_t(r)] for r in x], [0], 0):
            quick._verdict(screen, set(MODES), EPS)
    # the measure of one evaluation (a check's Problem makes it), then the points with
    # their graph, the moved points, the jvps (the vjps: one backward)
    assert together.calls == 1 + 3
    assert alone.calls == 6 * 4       # each point, its two moves, its jvp


def test_a_point_where_the_batch_makes_nan_is_screened_by_its_own_call():
    # refengine's det takes the SVD's formula for every example of a batch (one
    # branch for all), whose second derivative at a zero matrix is NaN; the point's
    # own call takes det's other branch there. det is cubic in a 3 x 3 matrix: its
    # second derivative at 0 is 0, which the screen made together must give
    a = np.random.default_rng(0).standard_normal((3, 3))
    first, args = first_derivative(E.linalg.det, (_t(a),), None, np.random.default_rng(0))
    gos = list(args[1:])
    points = [[_t(m)] + gos for m in (np.zeros((3, 3)), 2 * a)]
    together = _together(first, points, [0], 4, True)
    assert together[0].formula("reverse") == 0.0
    assert quick._verdict(together[0], {"reverse"}, EPS) == "pass"
    # (at 2a the batch's SVD formula and the point's inverse round apart: their
    # outputs differ by some ulps, which the quotients' small step magnifies)
    _same(_alone(first, points, [0], 4, True), together, modes=("reverse",), rtol=1e-8)


def test_a_point_outside_the_domain_is_screened_by_its_own_call_in_its_turn():
    # log at an exact zero: -inf there, NaN times 0; the point's own call says
    # "domain", and the points after it draw their directions as they would alone
    points = _points(([0.5, 1.0, 2.0],), ([0.0, 0.0, 0.0],), ([0.0, 1.0, 3.0],),
                     ([1e-8, 4e-8, 2e-8],))
    def func(x):
        return E.log(x) * x
    together = _together(func, points, [0], 6)
    assert together is not None and together[1] == "domain"
    _same(_alone(func, points, [0], 6), together)


def _refuses_negatives(x):
    if np.any(x.detach().numpy() < 0):    # a domain check in Python: vmap cannot map it
        raise ValueError("negative")
    return E.sqrt(x + 1.0) * x


def test_a_batch_beyond_the_memory_budget_is_not_made():
    # 8 points whose evaluation each holds two temporaries of 8 MiB: every point with
    # its graph and both its moves at once (24 evaluations, 400 MiB) are beyond the
    # share of a 64 MiB budget a batch may take (a quarter), within that of 2 GiB
    def heavy(x):
        return (E.exp(x[:, None] * E.ones(1024)).sum(1) + E.sin(x)) if x.shape[0] else x

    points = _points(*[([0.1 * k, 0.2, -0.3 * k] * 341,) for k in range(8)])
    engine = engine_for(points[0])
    measured.first_evaluation(lambda: heavy(*points[0]), heavy, tuple(points[0]), engine)
    assert measured.known_bytes(heavy, tuple(points[0]), engine) >= 8 * 2**20
    with batched(True):
        small = batchscreens.screens(engine, heavy, points, [0], np.random.default_rng(0),
                                     EPS, budget=64 * 2**20)
        large = batchscreens.screens(engine, heavy, points, [0], np.random.default_rng(0),
                                     EPS, budget=2**31)
    assert small is None and large is not None
    # and a function whose evaluation no check measured is screened one point at a time
    with batched(True):
        assert batchscreens.screens(engine, lambda x: E.sin(x), points, [0],
                                    np.random.default_rng(0), EPS) is None


def test_a_batch_that_raises_leaves_the_points_one_by_one():
    points = _points(([0.5, 1.0],), ([-1.0, 2.0],), ([0.0, 0.0],))
    assert _together(_refuses_negatives, points, [0], 0) is None
    assert _alone(_refuses_negatives, points, [0], 0)[1] == "domain"


@pytest.mark.parametrize("func, at", [
    (lambda x: E.abs(x) * x, [0.5, -1.5, 2.0]),
    (lambda x: E.amax(x, 0), [0.5, -1.5, 2.0]),
    (lambda x: E.sqrt(x * x + 1e-300), [0.3, 2.0, -0.7]),
    (lambda x: E.log(x) * x, [0.5, 1.5, 2.0]),
    (lambda x, y: E.maximum(x, y), ([0.5, -1.5, 2.0], [1.0, -1.5, 0.0])),
])
def test_a_check_explores_alike_with_and_without_the_batch(func, at):
    ins = tuple(_t(a) for a in at) if isinstance(at, tuple) else (_t(at),)
    tallies = []
    for batch in (True, False):
        with batched(batch):
            report = check(func, ins, seed=0, precise=True, explore="quick",
                           check_forward_ad=True)
        tallies.append({k: v for k, v in report.counts["explore"].items() if k != "seconds"})
        assert report.passed, str(report)
    assert tallies[0] == tallies[1] and tallies[0]["tried"] >= 3


def _announced(func, inputs, crashed=None):
    seen: list = []
    with watch.watching(seen.append, lambda: seen.append(None), crashed):
        report = check(func, inputs, seed=0, explore="quick")
    return report, [k for k in seen if k is not None]


def test_a_batch_is_announced_and_a_death_there_charges_no_point():
    inputs = (_t([0.5, -1.5, 2.0]),)
    report, keys = _announced(E.sin, inputs)
    batches = [k for k in keys if k.startswith("batch-")]
    assert report.passed and len(batches) == 1 and keys[0] == batches[0]
    points = keys[1:]
    assert len(points) == report.counts["explore"]["tried"] > 2
    # the run again after a death in that batch: no batch, every point alone, none
    # charged with the death (the next death, if the point's own, names it)
    again, keys = _announced(E.sin, inputs, crashed={batches[0]: "it crashed with SIGSEGV"})
    assert keys == points
    assert again.passed and again.counts["explore"]["crashes"] == 0
