"""The first evaluation's memory is measured once per function and shapes
(``gradcheck.core.measured``): a repeat of the same function at inputs like
the last ones reuses the measure; anything that could change what the
function allocates (other code, another object closed over, other shapes or
dtypes) is measured afresh."""
import gc

import numpy as np
import pytest

import adcheck.refengine as E
from adcheck.gradcheck import check, gradgradcheck
from adcheck.gradcheck.core import heap, measured
from adcheck.gradcheck.core.problem import Problem


@pytest.fixture
def measures(monkeypatch):
    """The calls of ``heap.transient_bytes``, counted, each answering 4096
    more bytes than the one before (so a reused measure is told from a new one)."""
    monkeypatch.setattr(measured, "_KEPT", {})
    seen = []

    def counted(call):
        seen.append(call)
        return call(), 4096 * len(seen)
    monkeypatch.setattr(heap, "transient_bytes", counted)
    return seen


def _x(n=5, dtype=E.float64):
    return E.tensor(np.linspace(0.1, 1.0, n), dtype=dtype, requires_grad=True)


def _scaled_by(w):
    return lambda x: x * w


def test_the_same_function_at_the_same_shapes_is_measured_once(measures):
    f = _scaled_by(E.tensor(np.full(5, 2.0)))
    first = Problem(f, (_x(),), "f").evaluation_bytes
    again = Problem(f, (_x(),), "f").evaluation_bytes
    assert len(measures) == 1
    assert again == first == 4096


def test_a_new_lambda_over_the_same_objects_is_the_same_function(measures):
    # (what a benchmark or a sweep does: the function is made anew for each check)
    w = E.tensor(np.full(5, 2.0))
    Problem(_scaled_by(w), (_x(),), "f")
    Problem(_scaled_by(w), (_x(),), "f")
    assert len(measures) == 1


def test_another_object_closed_over_is_measured_afresh(measures):
    Problem(_scaled_by(E.tensor(np.full(5, 2.0))), (_x(),), "f")
    Problem(_scaled_by(E.tensor(np.full(5, 3.0))), (_x(),), "f")
    assert len(measures) == 2


def test_other_shapes_or_dtypes_are_measured_afresh(measures):
    f = E.sin
    Problem(f, (_x(5),), "sin")
    Problem(f, (_x(6),), "sin")
    Problem(f, (_x(6, E.float32),), "sin", warn_precision=False)
    assert len(measures) == 3


def test_other_code_is_measured_afresh(measures):
    Problem(lambda x: x.sin(), (_x(),), "sin")
    Problem(lambda x: x.cos(), (_x(),), "cos")
    assert len(measures) == 2


def test_a_closure_over_a_list_is_measured_every_time(measures):
    sizes = [5]      # (a list has no weak reference, and may change between checks)

    def f(x):
        return x * len(sizes)
    Problem(f, (_x(),), "f")
    Problem(f, (_x(),), "f")
    assert len(measures) == 2


def test_a_measure_whose_objects_are_gone_is_not_reused(measures):
    f = _scaled_by(E.tensor(np.full(5, 2.0)))
    Problem(f, (_x(),), "f")
    del f
    gc.collect()
    # a new object may get the old one's identity; the dead reference tells them apart
    for _ in range(3):
        Problem(_scaled_by(E.tensor(np.full(5, 2.0))), (_x(),), "f")
        gc.collect()
    assert len(measures) == 4


def test_a_check_repeated_gives_the_same_report(monkeypatch):
    monkeypatch.setattr(measured, "_KEPT", {})
    w = E.tensor(np.full(5, 2.0))
    reports = [check(_scaled_by(w), (_x(),), fast_mode=True, seed=3) for _ in range(2)]
    assert all(r.passed for r in reports)
    assert [r.to_dict()["results"] for r in reports][0] == reports[1].to_dict()["results"]


def test_a_second_order_checks_first_derivative_is_measured_once(measures):
    # (the first derivative is a new closure over new lists every check, yet what it
    # allocates is fixed by the function and the shapes: ``measured.TRANSFORM_OF``)
    assert gradgradcheck(E.sin, (_x(),))
    first = len(measures)
    assert first >= 1
    assert gradgradcheck(E.sin, (_x(),))
    assert len(measures) == first
    assert gradgradcheck(E.cos, (_x(),))   # another function's derivative: measured afresh
    assert len(measures) > first
