"""The point check's points beside the inputs (``core.beside``) ride in the
numerical Jacobian's first evaluation of each input, plain central
differences and Richardson's alike: the check itself then calls the function
no more (its own vmapped call was an eighth of a slow check of a small op),
and finds what it found before: a value at the point that is not the limit
around it, and nothing where a point beside it raises."""
from __future__ import annotations

import numpy as np
import pytest

from adcheck import gradcheck
from adcheck import refengine as E
from adcheck.gradcheck.verdict import pointvalue

from gradcheck_support import special_case


def _calls_during_point_check(monkeypatch, func):
    """``(func counted, its calls in all, its calls inside each point check)``."""
    calls, inside = [], []

    def counted(*args):
        calls.append(1)
        if inside:
            inside[-1] += 1
        return func(*args)
    real = pointvalue.point_results

    def watched(ev):
        inside.append(0)
        return real(ev)
    monkeypatch.setattr(pointvalue, "point_results", watched)
    return counted, calls, inside


@pytest.mark.parametrize("precise", [False, True])
def test_the_point_check_calls_nothing_of_its_own(monkeypatch, precise):
    func = lambda x, y: E.sin(x) * y   # noqa: E731
    counted, calls, inside = _calls_during_point_check(monkeypatch, func)
    x = E.tensor(np.array([0.3, -1.2, 2.0]), requires_grad=True)
    y = E.tensor(np.array([0.5, 0.25, -2.0]), requires_grad=True)
    report = gradcheck.check(counted, (x, y), precise=precise, explore=False, seed=0)
    assert report.passed
    assert inside == [0] and calls   # (it ran, and read what the differences made)


@pytest.mark.parametrize("precise", [False, True])
def test_a_value_that_is_not_the_limit_is_still_found(precise):
    x = E.tensor(np.array([0.0, 0.5, -1.5]), requires_grad=True)
    report = gradcheck.check(special_case, (x,), precise=precise, explore=False, seed=0)
    (found,) = [r for r in report.failures if r.check == "discontinuous"]
    assert "is 1 at the given inputs but" in found.diagnosis


def test_a_function_raising_only_beside_the_point_is_checked_as_before():
    given = np.array([0.3, -1.2, 2.0])

    def picky(t):
        # raises where more than one coordinate moved: at the points beside the
        # given inputs (every coordinate moved), never at a central difference's
        if int((t.detach().numpy() != given).sum()) > 1:
            raise ValueError("moved too far")
        return E.sin(t)
    x = E.tensor(given.copy(), requires_grad=True)
    for precise in (False, True):
        report = gradcheck.check(picky, (x,), precise=precise, explore=False, seed=0)
        assert report.passed, report
        assert not any(r.check == "discontinuous" for r in report.results)
