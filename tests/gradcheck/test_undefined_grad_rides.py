"""The undefined-grad check of a function of several outputs rides in the
reverse batches, a zero row on each output, where undefined gradients are
zeros (refengine): before, it was a vjp of its own with every output's
zeros, a whole extra backward (a sixth of a gradgrad check of pow, whose
first derivative has two outputs). Each output's part of the graph is still
run with zero gradients, so a backward that adds a term not multiplying its
grad_output is caught on whichever output it sits."""
import numpy as np
import pytest

import adcheck.refengine as E
from adcheck.gradcheck import check
from adcheck.refengine.autograd import Function


class Offset(Function):
    """2 x, whose backward adds 1: wrong when its output gradient is zero."""

    @staticmethod
    def forward(ctx, x):
        return 2 * x

    @staticmethod
    def backward(ctx, g):
        return 2 * g + 1


def _two_outputs(wrong_on: int | None):
    def f(x):
        first = Offset.apply(x) if wrong_on == 0 else 2 * x
        second = Offset.apply(x.sin()) if wrong_on == 1 else 2 * x.sin()
        return first, second
    return f


def _x():
    return E.tensor(np.linspace(-1.0, 1.0, 5), requires_grad=True)


@pytest.mark.parametrize("wrong_on", [0, 1])
def test_a_backward_adding_a_constant_is_caught_on_either_output(wrong_on):
    report = check(_two_outputs(wrong_on), (_x(),), seed=0)
    failing = [r for r in report.failures if r.check == "undefined-grad"]
    assert failing and "does not multiply grad_output" in failing[0].diagnosis
    # the premise, by hand: both zero output gradients, a nonzero input gradient
    x = _x()
    outs = _two_outputs(wrong_on)(x)
    (g,) = E.autograd.grad(outs, x, [E.zeros_like(o) for o in outs])
    assert np.count_nonzero(g.numpy()) == 5


def _backward_calls(monkeypatch, func, inputs, **options) -> int:
    """How many backward passes the engine runs for ``check`` (batched or not)."""
    from adcheck.gradcheck.engines.base import Engine
    calls = []
    for name in ("grad", "batched_grad"):
        original = getattr(Engine, name)

        def counted(self, *args, _original=original, **kwargs):
            calls.append(1)
            return _original(self, *args, **kwargs)
        monkeypatch.setattr(Engine, name, counted)
    report = check(func, inputs, seed=0, **options)
    monkeypatch.undo()
    assert report.passed
    return len(calls)


def test_right_formulas_pass_and_the_check_costs_no_backward_of_its_own(monkeypatch):
    f = _two_outputs(None)
    assert _backward_calls(monkeypatch, f, (_x(),)) == \
        _backward_calls(monkeypatch, f, (_x(),), check_undefined_grad=False)


def test_second_order_of_a_binary_op_costs_no_extra_backward_either(monkeypatch):
    def inputs():
        return (E.tensor(np.linspace(0.5, 2.0, 5), requires_grad=True),
                E.tensor(np.linspace(0.5, 1.5, 5), requires_grad=True))
    assert _backward_calls(monkeypatch, E.pow, inputs(), order=2) == \
        _backward_calls(monkeypatch, E.pow, inputs(), order=2, check_undefined_grad=False)
