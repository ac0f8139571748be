"""Richardson's sentinels deferred to the second phase's evaluation
(``gradcheck.numerics.sentinel.first`` returning ``DEFERRED``).

When no column that stops lacks its group's confirmation, every column that
still needs a sentinel goes on to the next levels anyway, so its sentinel
comes with them: one evaluation fewer, the same points. Each case compares
the Jacobian against the same run with the sentinels evaluated on their own
(as before the deferral), value for value and bit for bit, and against the
derivative in closed form.
"""
from __future__ import annotations

import numpy as np
import pytest

import adcheck.refengine as E
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.problem import Problem
from adcheck.gradcheck.numerics import quotients, richardson, sentinel
from adcheck.gradcheck.numerics.richardson_jacobian import richardson_blocks


def _eager(original):
    """``sentinel.first`` that evaluates deferred sentinels at once."""
    def first(ev, source, window, current, settled, level, group):
        found = original(ev, source, window, current, settled, level, group)
        if found is sentinel.DEFERRED:   # (then every column needing one is unsettled:
            return np.flatnonzero(~settled)   # each then evaluated in a call of its own)
        return found
    return first


def _run(monkeypatch, f, x, eager: bool):
    """The numerical Jacobian of ``f`` at ``x`` and the evaluations made."""
    calls = []
    made = quotients.perturbed_outputs

    def counted(*args, **kwargs):
        calls.append(1)
        return made(*args, **kwargs)
    with monkeypatch.context() as m:
        m.setattr(quotients, "perturbed_outputs", counted)
        if eager:
            m.setattr(sentinel, "first", _eager(sentinel.first))
        leaf = E.tensor(x, dtype=E.float64, requires_grad=True)
        jac = richardson_blocks(Evaluator(Problem(f, (leaf,))))
    return jac, len(calls)


def _same(a, b):
    for key in a.blocks:
        assert a.blocks[key].tobytes() == b.blocks[key].tobytes()
        assert a.errors[key].tobytes() == b.errors[key].tobytes()


def test_curved_columns_take_their_sentinels_with_the_second_levels(monkeypatch):
    x = np.linspace(0.3, 1.4, 20)
    deferred, calls = _run(monkeypatch, lambda t: E.sin(t) * E.exp(t), x, eager=False)
    eager, eager_calls = _run(monkeypatch, lambda t: E.sin(t) * E.exp(t), x, eager=True)
    assert calls == eager_calls - 1 == 2   # (the first levels with the groups; then levels 2, 3)
    _same(deferred, eager)
    expected = np.diag((np.cos(x) + np.sin(x)) * np.exp(x))
    np.testing.assert_allclose(deferred.blocks[0, 0], expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("where", [[2], [0, 17]], ids=["one", "two groups"])
def test_a_stopping_stair_among_curved_columns_is_judged_at_once(monkeypatch, where):
    # a staircase (round(x, 3): wide steps read slope 1) settles after two steps
    # in a group whose curved columns do not: its own sentinel decides at once
    # (nothing deferred), and sees the flat stair
    size = 20
    mask = np.zeros(size)
    mask[where] = 1.0
    m = E.tensor(mask, dtype=E.float64)

    def f(t):
        return t ** 3 * (1 - m) + 2 * t * m + E.floor(t * m * 1000 + 0.5) / 1000 * m
    x = np.linspace(0.3, 1.4, size)
    x[where] = [0.96, 0.64][:len(where)]
    deferred, calls = _run(monkeypatch, f, x, eager=False)
    eager, eager_calls = _run(monkeypatch, f, x, eager=True)
    # (first levels; the stairs' sentinels; levels 2, 3; the stairs' deeper ones)
    assert calls == eager_calls >= 3
    _same(deferred, eager)
    expected = np.diag(np.where(mask == 1, 2.0, 3 * x ** 2))
    np.testing.assert_allclose(deferred.blocks[0, 0], expected, rtol=1e-9, atol=1e-9)


def test_deferred_sentinels_of_output_windows(monkeypatch):
    # under a budget of 1 MiB the quotients of 10,000 outputs go a window of them
    # at a time: deferred sentinels are evaluated for the window before its parts
    # judge their columns, the same points as before the deferral
    size = 10_000
    x = np.linspace(0.2, 1.2, size)
    directions = np.random.default_rng(0).standard_normal((2, size))
    steps = np.array(np.broadcast_to(2.0 ** -np.arange(richardson.DEEPEST)[:, None],
                                     (richardson.DEEPEST, 2)))
    found = []
    for eager in (False, True):
        with monkeypatch.context() as m:
            if eager:
                m.setattr(sentinel, "first", _eager(sentinel.first))
            leaf = E.tensor(x, dtype=E.float64, requires_grad=True)
            ev = Evaluator(Problem(lambda t: E.sin(t), (leaf,)), budget=2 ** 20)
            assert richardson._windows(ev, None, {0: size}, 2, richardson.AGREE_LEVELS)
            found.append(richardson.extrapolated_columns(ev, 0, steps, directions)[0][0])
    assert [a.tobytes() for a in found[0]] == [a.tobytes() for a in found[1]]
    np.testing.assert_allclose(found[0][0], directions * np.cos(x), rtol=1e-8, atol=1e-10)
