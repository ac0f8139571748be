"""A second-order check's quick screens build the first derivative once per
check (its grad_outputs are drawn from the same seed at every point) and
evaluate its moved points without a graph (only their values are read).
Neither may change a screen: each word here is compared with the word of a
first derivative built at the point itself, as every screen built it before."""
from __future__ import annotations

import numpy as np
import pytest

import adcheck.refengine as E
from adcheck.gradcheck.core import secondorder
from adcheck.gradcheck.core.options import Options
from adcheck.gradcheck.engines import engine_for
from adcheck.gradcheck.explore import quick, search
from adcheck.gradcheck.verdict.report import Report

EPS = float(np.finfo(np.float64).eps)


def _tensor(values):
    return E.tensor(np.array(values, dtype=np.float64), dtype=E.float64, requires_grad=True)


def _explorer(func, given):
    options = Options(order=2, explore="quick", seed=3)
    report = Report("f", "refengine", seed=3)
    return search.Explorer(None, func, (_tensor(given),), options, report, True, False)


def _word_built_there(func, given, at):
    """The screen's word at ``at`` of a first derivative built at ``at`` (as before)."""
    explorer = _explorer(func, given)
    first, ins = secondorder.first_derivative(func, (_tensor(at),), None,
                                              np.random.default_rng(3))
    return quick.screen(explorer.engine, first, list(ins), [0], {"reverse"},
                        np.random.default_rng(7), EPS, needs_grad=True)


def _words_reused(func, given, points):
    """The words of one explorer screening ``points`` in turn (the rng reset at each,
    so that each is comparable with a screen of its own), and how often it built
    the first derivative."""
    explorer = _explorer(func, given)
    built, words = [], []
    original = secondorder.first_derivative

    def counted(*args, **kwargs):
        built.append(1)
        return original(*args, **kwargs)
    secondorder.first_derivative = counted
    try:
        for at in points:
            explorer.rng = np.random.default_rng(7)
            words.append(explorer._screened({0: np.array(at, dtype=np.float64)}))
    finally:
        secondorder.first_derivative = original
    return words, len(built)


@pytest.mark.parametrize("func", [E.sin, E.abs, E.sqrt, lambda x: x * E.exp(x)])
def test_one_first_derivative_screens_every_point_as_its_own_did(func):
    given = [0.3, -1.2, 2.0]
    points = [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [1e-12, -3.0, 4.0], [2.0, 0.5, 9.0]]
    words, built = _words_reused(func, given, points)
    assert built == 1
    assert words == [_word_built_there(func, given, at) for at in points]


def test_a_point_where_the_outputs_are_shaped_otherwise_gets_its_own():
    # the positive entries only: three outputs at the given inputs, none at zeros,
    # one at [1, -1, -1]; grad_outputs drawn for three do not fit the others
    def positive_cubes(x):
        return x[x > 0] ** 3
    given = [0.3, 1.2, 2.0]
    points = [[0.5, 0.25, 1.5], [0.0, 0.0, 0.0], [1.0, -1.0, -1.0]]
    words, built = _words_reused(positive_cubes, given, points)
    assert built == 3     # the first point's, then one at each point of another shape
    assert words == [_word_built_there(positive_cubes, given, at) for at in points]
    assert words[1:] != ["domain", "domain"]   # what the first one's grad_outputs gave


def test_a_point_where_the_function_raises_is_judged_as_before():
    def log_or_raise(x):
        if float(x.detach().numpy().min()) <= 0:
            raise ValueError("outside the domain")
        return E.log(x)
    words, built = _words_reused(log_or_raise, [0.3, 1.2, 2.0], [[0.5, 1.0, 2.0],
                                                                  [0.0, 1.0, 2.0]])
    # (building the first derivative at a point where the function raises raised,
    # and the screen said: judge in full)
    assert words == ["pass", "judge"]
    assert built == 2


@pytest.mark.parametrize("func", [E.sin, E.tanh, lambda x: E.abs(x) * x,
                                  lambda x: E.softmax(x, 0)])
def test_without_graph_gives_the_same_values_bit_for_bit_and_no_graph(func):
    x = _tensor([0.3, -1.2, 2.0])
    first, ins = secondorder.first_derivative(func, (x,), None, np.random.default_rng(0))
    with E.enable_grad():
        graphed = first(*ins)
        plain = first.without_graph(*ins)
    assert [g.requires_grad for g in graphed] == [True]
    assert [g.requires_grad for g in plain] == [False]
    for a, b in zip(graphed, plain):
        assert a.detach().numpy().tobytes() == b.numpy().tobytes()


def test_the_derivative_of_the_screened_values_is_the_finite_difference():
    # independent of the code under test: d/dx (g cos x) = -g sin x, by central
    # differences of ``without_graph``'s values
    x = _tensor([0.3, -1.2, 2.0])
    first, ins = secondorder.first_derivative(E.sin, (x,), None, np.random.default_rng(0))
    g = ins[1].detach().numpy()
    h = 1e-6

    def value(at):
        with E.enable_grad():
            return first.without_graph(_tensor(at), ins[1])[0].numpy()
    base = np.array([0.3, -1.2, 2.0])
    numeric = (value(base + h) - value(base - h)) / (2 * h)
    np.testing.assert_allclose(numeric, -g * np.sin(base), rtol=1e-7, atol=1e-9)
    assert engine_for(ins).name == "refengine"


def test_torch_reuses_the_first_derivative_but_keeps_the_graph_at_moved_points():
    # torch's backward of linalg.solve, det and slogdet takes other kernels when it
    # builds a graph (their moved values differed in the last bits): no ``without_graph``
    torch = pytest.importorskip("torch", reason="the torch engine's first derivative")
    a = torch.tensor([[2.0, 0.5], [0.25, 3.0]], dtype=torch.float64, requires_grad=True)
    first, _ = secondorder.first_derivative(torch.linalg.det, (a,), None,
                                            np.random.default_rng(0))
    assert first.reusable and not hasattr(first, "without_graph")
    options = Options(order=2, explore="quick", seed=3)
    explorer = search.Explorer(None, torch.linalg.det, (a,), options,
                               Report("det", "torch", seed=3), True, False)
    points = ([[1.0, 2.0], [3.0, 4.0]], [[0.0, 0.0], [0.0, 0.0]], [[1.0, 1.0], [1.0, 1.0]])
    built, words = [], []
    original = secondorder.first_derivative
    secondorder.first_derivative = lambda *args, **kw: built.append(1) or original(*args, **kw)
    try:
        for at in points:
            explorer.rng = np.random.default_rng(7)
            words.append(explorer._screened({0: np.array(at)}))
    finally:
        secondorder.first_derivative = original
    assert built == [1]
    for at, word in zip(points, words):
        there = torch.tensor(at, dtype=torch.float64, requires_grad=True)
        own, ins = secondorder.first_derivative(torch.linalg.det, (there,), None,
                                                np.random.default_rng(3))
        assert word == quick.screen(engine_for(ins), own, list(ins), [0], {"reverse"},
                                    np.random.default_rng(7), EPS, needs_grad=True)
