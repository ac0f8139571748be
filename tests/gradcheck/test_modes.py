"""The vocabulary of checks: every place that names a check reads one table."""
from __future__ import annotations

import gradcheck_zoo as zoo
import pytest

from adcheck import gradcheck
from adcheck import opinfo
import adcheck.refengine as E
from adcheck.gradcheck.core.modes import CAPABILITIES, CHECK_NAMES, CHECKS, DEFAULT_CHECKS, check_named


def test_cli_help_lists_every_check_with_its_summary():
    from adcheck.cli.options import CHECK_HELP
    assert CHECK_HELP == ", ".join(f"{c.name} ({c.summary})" for c in CHECKS.values())


def test_known_failures_accept_every_known_as_name_and_nothing_else():
    for check in CHECKS.values():
        opinfo.KnownFailure(check.known_as, "reason")
        opinfo.KnownFailure(f"torch_{check.known_as}", "reason")
    with pytest.raises(ValueError, match="not one of"):
        opinfo.KnownFailure("fast", "fast is covered as reverse")


def test_capabilities_are_what_opinfo_supports_answers():
    info = opinfo.get("sin")
    assert [info.supports(c) for c in CAPABILITIES] == [True] * len(CAPABILITIES)
    with pytest.raises(ValueError, match="expected one of"):
        info.supports("fast")


def test_defaults_and_unknown_names():
    assert DEFAULT_CHECKS == ("reverse", "forward", "gradgrad", "reference")
    assert set(DEFAULT_CHECKS) <= set(CHECK_NAMES)
    with pytest.raises(ValueError, match="choose from reverse, forward"):
        check_named("backward")


@pytest.mark.parametrize("name", CHECK_NAMES)
def test_keywords_run_what_the_entry_says(name):
    check = CHECKS[name]
    x = E.rand(3, dtype=E.float64) + 0.5
    x.requires_grad_()
    reference = None
    if check.against == "reference":
        import mpmath
        import numpy as np
        reference = np.vectorize(mpmath.sin, otypes=[object])
    report = gradcheck.check(E.sin, (x,), seed=0,
                             **check.keywords(precise=check.ad != "fast", reference=reference))
    assert report.passed
    sources = set(report.jacobians)
    built = {"reverse": "reverse", "forward": "forward", "fast": "fast-reverse"}[check.ad]
    assert built in sources
    assert check.against in sources or check.ad == "fast"


def test_a_second_order_check_fails_where_only_the_second_derivative_is_wrong():
    x = E.rand(3, dtype=E.float64) + 0.5
    x.requires_grad_()
    wrong = zoo.wrong_second_derivative(E)
    first = gradcheck.check(wrong, (x,), seed=0, **CHECKS["reverse"].keywords())
    second = gradcheck.check(wrong, (x,), seed=0, **CHECKS["gradgrad"].keywords())
    assert first.passed and not second.passed
    assert second.failures[0].order == 2
    assert "reverse-over-reverse (second-order) Jacobian" in second.message()
