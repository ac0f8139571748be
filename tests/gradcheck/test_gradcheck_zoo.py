"""The zoo: every wrong formula is caught by the check that should catch it
and diagnosed; every correct formula passes every check."""
from __future__ import annotations

import gradcheck_zoo as zoo
import pytest

from adcheck.gradcheck import GradcheckError, check, gradcheck

BUGS = zoo.bugs()
CORRECT = zoo.correct()


def _assert_caught(report, entry):
    assert not report.passed, f"{entry.name} was not caught"
    if entry.diagnosis:
        assert report.diagnosis and entry.diagnosis in report.diagnosis, report.message()


@pytest.mark.parametrize("entry", BUGS, ids=lambda e: e.name)
def test_bug_is_caught_and_diagnosed(E, entry):
    f, inputs = entry.build(E), entry.inputs(E)
    if entry.caught_by == "default":
        _assert_caught(check(f, inputs, seed=0), entry)
        with pytest.raises(GradcheckError) as info:
            gradcheck(f, inputs, seed=0)
        assert f"output {entry.out_idx}" in str(info.value), str(info.value)
        assert info.value.report is not None
    elif entry.caught_by == "forward":
        assert check(f, inputs, seed=0).passed, "a jvp-only bug must not fail the vjp checks"
        _assert_caught(check(f, inputs, check_forward_ad=True, seed=0), entry)
    elif entry.caught_by == "adjoint":
        report = check(f, inputs, check_forward_ad=True, seed=0)
        assert [r.check for r in report.failures] == ["adjoint"], report.message()
        _assert_caught(report, entry)
    elif entry.caught_by == "precise":
        assert check(f, inputs, seed=0).passed, "below rtol: the default check passes"
        _assert_caught(check(f, inputs, precise=True, seed=0), entry)
    elif entry.caught_by == "gradgrad":
        assert check(f, inputs, check_forward_ad=True, seed=0).passed
        _assert_caught(check(f, inputs, order=2, seed=0), entry)
    else:
        raise AssertionError(f"unknown check {entry.caught_by}")


@pytest.mark.parametrize("entry", CORRECT, ids=lambda e: e.name)
def test_correct_formula_passes_every_check(E, entry, request):
    reason = zoo.KNOWN_ENGINE_BUGS.get((E.__name__, entry.name))
    if reason:
        request.applymarker(pytest.mark.xfail(reason=reason, strict=True))
    f, inputs = entry.build(E), entry.inputs(E)
    for options in (dict(check_forward_ad=True),
                    dict(check_forward_ad=True, fast_mode=True, probes=3),
                    dict(check_forward_ad=True, precise=True),
                    dict(order=2, check_forward_ad=True)):
        report = check(f, inputs, **options)
        assert report.passed, f"{options}: {report.message()}"
