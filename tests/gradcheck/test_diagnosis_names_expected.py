"""A failure's diagnosis names the side it was compared with: a formula off by
a factor reads "times the mpmath reference" or "times same_as's Jacobian"
when that is what judged it, not "times numerical" (the factor itself is
the planted one, which finite differences would show too).
"""
from __future__ import annotations

import mpmath
import numpy as np

from adcheck import refengine as E
from adcheck.gradcheck.api import check


def _scaled_sin(slope):
    class Sin(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return E.sin(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * E.cos(x) * slope
    return Sin.apply


def _x():
    values = np.random.default_rng(1).uniform(0.3, 1.2, (3, 4))
    return E.tensor(values, dtype=E.float64, requires_grad=True)


def _mp_sin(x):
    return np.vectorize(mpmath.sin, otypes=[object])(x)


def _factor(report):
    return report.failures[0].diagnosis


def test_against_finite_differences_the_words_are_numerical():
    report = check(_scaled_sin(1.25), (_x(),), precise=True)
    assert "analytical is 1.25 times numerical" in _factor(report)


def test_against_an_mpmath_reference_the_words_name_it():
    report = check(_scaled_sin(1.25), (_x(),), precise=True, reference=_mp_sin)
    assert report.failures[0].against == "reference"
    assert "analytical is 1.25 times the mpmath reference" in _factor(report)
    assert "numerical" not in _factor(report)


def test_against_same_as_the_words_name_it():
    report = check(_scaled_sin(1.25), (_x(),), precise=True, same_as=E.sin)
    assert report.failures[0].against == "same_as"
    assert "analytical is 1.25 times same_as's Jacobian" in _factor(report)
    # and differences agree with the twin: the planted factor is found without it
    assert "1.25 times numerical" in _factor(check(_scaled_sin(1.25), (_x(),), precise=True))
