"""A second-order check's quick screen says ``needs_grad``: its first
derivative differentiates inside, so the moved points are evaluated with grad
at once. Tried first without grad, as a plain function's are, each point made
one evaluation that could only raise (one forward per point, 1,549 points of
the sweep). The screen's word must be the same either way."""
from __future__ import annotations

import numpy as np
import pytest

import adcheck.refengine as E
from adcheck.gradcheck.core.secondorder import first_derivative
from adcheck.gradcheck.engines import engine_for
from adcheck.gradcheck.explore import quick

EPS = float(np.finfo(np.float64).eps)


def _screen(func, at, needs_grad):
    """The screen's word on ``func``'s first derivative at ``at``, and the calls
    of the first derivative whose inputs did not all require grad."""
    x = E.tensor(np.array(at), dtype=E.float64, requires_grad=True)
    first, ins = first_derivative(func, (x,), None, np.random.default_rng(0))
    without = []

    def watched(*args):
        if not all(a.requires_grad for a in args):
            without.append(args)
        return first(*args)
    ins = list(ins)
    word = quick.screen(engine_for(ins), watched, ins, [0], {"reverse"},
                        np.random.default_rng(0), EPS, needs_grad=needs_grad)
    return word, len(without)


@pytest.mark.parametrize("func, at", [(E.sin, [0.3, -1.2, 2.0]),
                                      (E.abs, [0.0, -1.0, 2.0]),
                                      (E.sqrt, [0.0, 1.0, 4.0])])
def test_the_screen_says_the_same_without_the_calls_that_raise(func, at):
    told, told_without = _screen(func, at, True)
    found, found_without = _screen(func, at, False)
    assert told == found
    assert told_without == 0
    # (the call without grad that the hint saves is made when the screen finds out)
    assert found_without >= (1 if found != "domain" else 0)


def test_a_wrong_double_backward_still_goes_to_the_full_check():
    # sin written with a first derivative whose own derivative is 10 % off:
    # d/dx (g cos x) taken as -1.1 g sin x
    class WrongCos(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return E.cos(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return -g * E.sin(x) * 1.1

    class Sin(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return E.sin(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * WrongCos.apply(x)

    assert _screen(Sin.apply, [0.3, -1.2, 2.0], True)[0] == "judge"
    assert _screen(E.sin, [0.3, -1.2, 2.0], True)[0] == "pass"
