"""The plugin's cases in process: the same selection, order and seeds as
``adcheck ops``, whatever process builds them."""
from __future__ import annotations

import pytest

from adcheck import opinfo
from adcheck import refengine
from adcheck.runner.checks import derive_seed
from pytest_adcheck.cases import SelectionError, plan_cases


def test_cases_follow_registry_order_then_dtype_then_sample():
    cases = plan_cases(("sin", "exp"), dtypes=("float64", "complex128"), checks="reverse")
    first_of = {}
    for position, case in enumerate(cases):
        first_of.setdefault((case.op_name, case.dtype_name), position)
    pairs = sorted(first_of, key=first_of.get)
    order = [o.name for o in opinfo.op_db]
    assert pairs == sorted(pairs, key=lambda p: (order.index(p[0]),
                                                 ("float64", "complex128").index(p[1])))
    for (op, dtype) in pairs:
        indices = [c.index for c in cases if (c.op_name, c.dtype_name) == (op, dtype)]
        assert indices == list(range(len(indices)))


def test_planning_twice_gives_the_same_ids():
    ids = [c.id for c in plan_cases(("sin", "exp*"), family="elementwise")]
    assert ids == [c.id for c in plan_cases(("sin", "exp*"), family="elementwise")]
    assert "sin-complex128-sample0" in ids and "expm1-float64-sample0" in ids


def test_default_dtypes_are_the_double_precision_ones():
    assert {c.dtype_name for c in plan_cases(("sin",))} == {"float64", "complex128"}


def test_a_dtype_may_be_given_as_a_refengine_dtype():
    by_name = [c.id for c in plan_cases(("sin",), dtypes="float64")]
    assert [c.id for c in plan_cases(("sin",), dtypes=refengine.float64)] == by_name


def test_checks_use_the_sweep_seeds():
    case = plan_cases(("sin",), dtypes="float64", checks="reverse", seed=5)[0]
    (result, report), = case.run()
    assert result.check == "reverse" and result.status == "passed"
    assert result.seed == report.seed == derive_seed(5, "sin", "float64", 0, "reverse")


def test_run_takes_other_checks():
    case = plan_cases(("sin",), dtypes="float64", checks="reverse")[0]
    assert [r.check for r, _ in case.run(checks=("forward", "reference"))] == \
        ["forward", "reference"]
    with pytest.raises(SelectionError, match="unknown check 'sideways'"):
        case.run(checks="sideways")


def test_selecting_nothing_is_an_error():
    with pytest.raises(SelectionError, match="selects no op: no op matches both"):
        plan_cases(("sin",), family="linalg")
    with pytest.raises(SelectionError, match="selects no sample: no selected op supports"):
        assert refengine.complex128 not in opinfo.get("atan2").dtypes
        plan_cases(("atan2",), dtypes="complex128")
