"""A Function that consumes the options it is handed (xitorch's rootfinder,
quadrature and ODE solvers ``pop`` their ``method`` from the dict they take)
is checked with the options as the model passed them, each call its own.
Before, the dict was recorded by reference, already emptied by the model's
own call: every check raised ``KeyError``, said "does not run in double
precision" of a Function run in float64, and the whole model's line blamed
the Function as failing on its own."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch)")

from adcheck import gradcheck  # noqa: E402


def _scale(factor: float):
    """``x * k`` with ``k`` popped from its options (a list of extra factors
    popped too); its gradient times ``factor`` (1 is right)."""

    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, options):
            ctx.k = options.pop("k") * options["more"].pop()
            return x * ctx.k

        @staticmethod
        def backward(ctx, grad):
            return grad * ctx.k * factor, None

    return Scale


def _model(function):
    class Model(torch.nn.Module):
        def forward(self, x):
            return function.apply(x.sin(), {"k": 3.0, "more": [0.5, 2.0]})

    return Model()


def _x():
    return torch.randn(5, dtype=torch.float64, generator=torch.Generator().manual_seed(0))


def test_a_function_that_consumes_its_options_passes():
    found = gradcheck.harvest(_model(_scale(1.0)), (_x(),))
    assert not found.errors, found.errors
    assert found.reports and all(r.passed for rs in found.reports.values() for r in rs)
    assert found.passed


def test_a_wrong_gradient_of_such_a_function_is_found_and_blamed():
    found = gradcheck.harvest(_model(_scale(1.5)), (_x(),))
    assert not found.errors, found.errors
    (name,) = found.failing()
    assert name.endswith(":Scale")
    report = found.reports[name][0]
    assert "1.5 times" in report.message()
    assert found.model is not None and not found.model.passed


def test_a_function_that_raises_in_float64_is_not_said_to_refuse_double_precision():
    calls = []

    class Once(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            calls.append(1)
            if len(calls) > 1:
                raise RuntimeError("called twice")
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    class Model(torch.nn.Module):
        def forward(self, x):
            return Once.apply(x)

    found = gradcheck.harvest(Model(), (_x(),), model_check=False)
    text = found.message()
    assert "called twice" in text
    assert "double precision" not in text


class _Budget:
    """A solver's state handed to its Function: one use only (a Function that
    consumes an object, not a dict, cannot be given a fresh one)."""

    def __init__(self):
        self.used = False

    def take(self):
        if self.used:
            raise RuntimeError("this solver state was used already")
        self.used = True


class _Consumes(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, budget):
        budget.take()
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2, None


class _StateModel(torch.nn.Module):
    def forward(self, x):
        return _Consumes.apply(x.sin(), _Budget())


def test_a_function_whose_check_raised_is_not_said_to_fail_on_its_own():
    found = gradcheck.harvest(_StateModel(), (_x(),))
    (name,) = found.errors
    assert "used already" in found.errors[name]
    assert found.model is not None and found.model.passed
    text = found.localisation
    assert "fail on their own" not in text
    assert name in text and "not judged" in text
