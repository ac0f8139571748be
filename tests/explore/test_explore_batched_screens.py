"""A quick screen's moved points in one vmapped call (``explore.moves``).

On refengine a second-order check's screen evaluates its first derivative
at the point moved by both steps in one call, not one call per step (a plain
function keeps its calls: refengine's vmap costs more than they do); the
quotients must be those of the calls one by one to the bit (the same NumPy
arithmetic per example), close to the closed-form derivative, and a batch
that raises must fall back to the calls one by one, which say which step
raises. A wrong formula must still be sent to the full check."""
from __future__ import annotations

import numpy as np
import pytest

import adcheck.refengine as E
from adcheck.gradcheck import check
from adcheck.gradcheck.core.batching import batched
from adcheck.gradcheck.core.secondorder import first_derivative
from adcheck.gradcheck.engines import engine_for
from adcheck.gradcheck.explore import quick
from counted import Counted
from explore_zoo import ZOO

EPS = float(np.finfo(np.float64).eps)


def _x(values, dtype=E.float64, grad=True):
    return E.tensor(np.array(values), dtype=dtype, requires_grad=grad)


def _first(func, ins, seed=0, batch=True):
    """The ``_Screen`` (or its word) of ``func``'s first derivative at ``ins``, its
    moved points batched or not, and the first derivative's inputs."""
    first, args = first_derivative(func, tuple(ins), None, np.random.default_rng(seed))
    with batched(batch):
        return quick.first_screen(engine_for(list(args)), first, list(args),
                                   list(range(len(ins))), np.random.default_rng(seed), EPS,
                                   True), list(args)


def _smooth(x):
    return E.sin(x) * x


def _hex(quotients):
    return [None if q is None else float(q).hex() for q in quotients]


def test_a_plain_function_keeps_its_calls_one_by_one():
    for batch in (True, False):
        counted = Counted(_smooth)
        with batched(batch):
            word = quick.screen(engine_for([_x([0.3, -1.2, 2.0])]), counted,
                                [_x([0.3, -1.2, 2.0])], [0], {"reverse"},
                                np.random.default_rng(0), EPS)
        assert word == "pass" and counted.calls == 3     # the point, then one call per step


def test_a_first_derivative_is_batched_with_one_call_for_both_steps():
    x = _x([0.3, -1.2, 2.0])
    first, ins = first_derivative(_smooth, (x,), None, np.random.default_rng(0))
    counted, looped = Counted(first), Counted(first)
    for func, batch in ((counted, True), (looped, False)):
        with batched(batch):
            quick.first_screen(engine_for(list(ins)), func, list(ins), [0],
                                np.random.default_rng(0), EPS, True)
    # the point with its graph, then the moved values without it: both steps at once
    assert (counted.calls, counted.without_graph.calls) == (1, 1)
    assert (looped.calls, looped.without_graph.calls) == (1, 2)


@pytest.mark.parametrize("at", [[0.3, -1.2, 2.0], [0.0, 0.0, 0.0], [1e-300, 1e300, -7.0]])
def test_the_batched_quotients_are_the_looped_ones_to_the_bit(at):
    (one, _), (each, _) = _first(_smooth, [_x(at)]), _first(_smooth, [_x(at)], batch=False)
    assert _hex(one.sides) == _hex(each.sides)
    with batched(True):
        halves = one.halves()
    with batched(False):
        looped = each.halves()
    assert _hex(halves) == _hex(looped)


def test_the_batched_quotients_approach_the_closed_form():
    x = np.array([0.3, -1.2, 2.0])
    screen, args = _first(_smooth, [_x(x)])
    g = args[1].detach().numpy()
    v, u = screen.v[0], screen.u[0]
    # the first derivative g (sin x + x cos x), and its own derivative g (2 cos x - x sin x)
    exact = float(v @ (g * (2 * np.cos(x) - x * np.sin(x)) * u))
    bound = float(np.abs(v) @ (np.abs(g) * (3 + 2 * np.abs(x)) * u * u))   # its derivative's
    assert screen.formula("reverse") == pytest.approx(exact, rel=1e-13)
    for steps, quotients in (((-1, 1), screen.sides), ((-0.5, 0.5), screen.halves())):
        for sign, q in zip(steps, quotients):
            h = sign * screen.step
            moved = x + h * u
            # the same quotient in NumPy, and Taylor's remainder around the closed form
            ours = float(v @ (g * (np.sin(moved) + moved * np.cos(moved))
                              - g * (np.sin(x) + x * np.cos(x)))) / h
            assert q == pytest.approx(ours, rel=1e-9)
            assert abs(q - exact) <= abs(h) / 2 * bound + 1e-12 / abs(h)
    central = (screen.sides[0] + screen.sides[1]) / 2
    assert abs(central - exact) < abs(screen.sides[1] - exact) / 100    # second order


def test_two_inputs_and_complex_values_are_batched_alike():
    y = _x([2.0, 0.5, -3.0])
    z = E.tensor(np.array([0.3 + 1j, -1.2 - 0.5j]), dtype=E.complex128, requires_grad=True)
    for func, ins in ((lambda a, b: E.sin(a) * b, [_x([0.3, -1.2, 2.0]), y]),
                      (lambda a: E.exp(a) * a.conj() + a, [z])):
        (one, _), (each, _) = _first(func, ins), _first(func, ins, batch=False)
        assert _hex(one.sides) == _hex(each.sides)


def _refuses_negatives(x):
    # raises at a point with a negative entry, as a domain check written in Python
    if np.any(x.detach().numpy() < 0):
        raise ValueError("negative")
    return E.sqrt(x + 1.0) * x


def test_a_step_that_raises_falls_back_to_the_calls_one_by_one():
    at = [0.0, 1.0, 4.0]      # x - h u has a negative entry, x + h u none
    first, ins = first_derivative(_refuses_negatives, (_x(at),), None, np.random.default_rng(0))
    counted = Counted(first)
    with batched(True):
        quick.first_screen(engine_for(list(ins)), counted, list(ins), [0],
                            np.random.default_rng(0), EPS, True)
    assert counted.without_graph.calls == 3       # the batch that raised, then each step
    one, _ = _first(_refuses_negatives, [_x(at)])
    each, _ = _first(_refuses_negatives, [_x(at)], batch=False)
    assert one.sides[0] is None and each.sides[0] is None
    assert _hex(one.sides) == _hex(each.sides)
    with batched(True):
        word = quick._verdict(one, {"reverse"}, EPS)
    with batched(False):
        assert word == quick._verdict(each, {"reverse"}, EPS) == "pass"   # no bracket: as before


class _WrongAtZero(E.autograd.Function):
    """x ** 3 with a backward that adds 1 where x is exactly 0 (wrong only there)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (3 * x * x + (x == 0).to(x.dtype))


def test_a_formula_wrong_at_a_zero_is_still_sent_to_the_full_check():
    with batched(True):
        at_zero = quick.screen(engine_for([_x([0.0, 0.0])]), _WrongAtZero.apply,
                               [_x([0.0, 0.0])], [0], {"reverse"}, np.random.default_rng(0), EPS)
        elsewhere = quick.screen(engine_for([_x([0.5, -2.0])]), _WrongAtZero.apply,
                                 [_x([0.5, -2.0])], [0], {"reverse"}, np.random.default_rng(0),
                                 EPS)
    assert (at_zero, elsewhere) == ("judge", "pass")
    report = check(_WrongAtZero.apply, (_x([0.5, -2.0]),), seed=0, precise=True, explore="quick")
    assert not report.passed and report.counts["explore"]["findings"]


@pytest.mark.parametrize("name", ["sinc", "x2logx", "max", "prod"])
def test_the_quick_pass_still_finds_the_zoo_bugs_on_refengine(name):
    entry = next(e for e in ZOO if e.name == name)
    buggy = check(entry.function(E, "buggy"), entry.inputs(E, 0), seed=0, precise=True,
                  explore="quick")
    assert not buggy.passed and buggy.counts["explore"]["findings"]
    fixed = check(entry.function(E, "fixed"), entry.inputs(E, 0), seed=0, precise=True,
                  explore="quick")
    assert fixed.passed, fixed.message()
