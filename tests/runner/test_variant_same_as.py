"""In a sweep that checks an op, its in-place variants are compared with it.

``adcheck ops`` plans its tasks together (``Settings.planned``): a variant
(``OpInfo.variant_of``) whose op is checked in the same run and dtype, with no
known failure for the check, is judged by the op's autograd derivatives at the
same inputs (``gradcheck.core.sameas``) instead of by differences. Judged by
the independent source each time: the wrong variant fails by differences
too, alone; the right one passes both ways; the reproducer rebuilds the
comparison the run made and gives its verdict.
"""
from __future__ import annotations

from pathlib import Path

from adcheck import runner
from adcheck.runner.checks import Policy
from adcheck.runner.registry import OPINFO
from adcheck.runner.reproduction import reproducer
from adcheck.runner.run import run_tasks
from adcheck.runner.record import RunRecord
from adcheck.runner.selection import plan, select
from adcheck.runner.tasks import Settings

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "cli" / "fixtures"
VARIANT_OPS = str(FIXTURES / "variant_ops.py")


@pytest.fixture(autouse=True)
def _plugins_do_not_outlive_their_test(restored_registry):
    yield


def _sweep(patterns, checks=("reverse",), together=True, registry=OPINFO):
    registry.load_plugins((VARIANT_OPS,))
    settings = Settings(checks, Policy(True, "refengine", 0), plugins=(VARIANT_OPS,),
                        registry=registry, keep_reports=True)
    tasks = plan(select(registry, patterns).infos, ["float64"], settings, together=together)
    return run_tasks(tasks, in_process=True)


def _against(outcome) -> dict:
    """``{(op, sample, check): what its expected Jacobian was}``."""
    found = {}
    pairs = [p for s in outcome.samples for p in zip(s.results, s.reports)]
    for result, report in pairs:
        modes = [m for m in ("same_as", "numerical", "reference") if m in report.jacobians]
        found[result.op, result.sample, result.check] = (result.status, modes[0])
    return found


def test_a_variant_swept_with_its_op_is_compared_with_it():
    found = _against(_sweep(("cli_vsin*",)))
    assert {k: v for k, v in found.items() if k[0] == "cli_vsin_right_"} == {
        ("cli_vsin_right_", s, "reverse"): ("passed", "same_as") for s in (0, 1)}
    assert {k: v for k, v in found.items() if k[0] == "cli_vsin_wrong_"} == {
        ("cli_vsin_wrong_", s, "reverse"): ("failed", "same_as") for s in (0, 1)}
    assert all(v == ("passed", "numerical") for k, v in found.items() if k[0] == "cli_vsin")


def test_a_variant_checked_without_its_op_is_judged_by_differences():
    found = _against(_sweep(("cli_vsin_*",)))
    assert found == {**{("cli_vsin_right_", s, "reverse"): ("passed", "numerical")
                        for s in (0, 1)},
                     **{("cli_vsin_wrong_", s, "reverse"): ("failed", "numerical")
                        for s in (0, 1)}}
    found = _against(_sweep(("cli_vsin*",), together=False))   # adcheck op, the plugin
    assert found[("cli_vsin_wrong_", 0, "reverse")] == ("failed", "numerical")


def test_the_reproducer_rebuilds_the_comparison_the_sweep_made():
    outcome = _sweep(("cli_vsin*",))
    (result,) = [r for r in outcome.results if r.op == "cli_vsin_wrong_" and r.sample == 1]
    record = RunRecord(plugins=(VARIANT_OPS,), precise=True)
    snippet = reproducer(result, record)
    assert "same_as=True" in snippet
    rebuilt = runner.rebuild("cli_vsin_wrong_", "float64", 1, "reverse", same_as=True,
                             plugins=[VARIANT_OPS])
    report = rebuilt.check()
    assert not report.passed and report.message().splitlines()[0] == result.message
    assert "same_as" in report.jacobians
    # and the ordinary rebuild judges the same variant by differences, failing it too
    assert not runner.rebuild("cli_vsin_wrong_", "float64", 1, "reverse",
                              plugins=[VARIANT_OPS]).check().passed


def test_same_as_is_refused_for_an_op_that_is_no_variant():
    from adcheck.runner.errors import RunnerError
    with pytest.raises(RunnerError, match="not an in-place variant"):
        runner.rebuild("sin", "float64", 0, "reverse", same_as=True)


def test_a_known_failure_of_the_op_leaves_its_variant_to_differences():
    from adcheck.opinfo.core import KnownFailure
    from adcheck.runner.checks import OpSubject
    import adcheck.refengine as E
    OPINFO.load_plugins((VARIANT_OPS,))
    base, variant = OPINFO.get("cli_vsin"), OPINFO.get("cli_vsin_right_")
    (sample,) = [s for s in OPINFO.samples(variant, E.float64) if s.index == 0]
    planned = frozenset({("cli_vsin", "float64")})
    assert OpSubject(OPINFO, variant, sample, E.float64, "refengine", planned).twin("reverse")
    object.__setattr__(base, "known_failures", (KnownFailure("reverse", "declared here"),))
    try:
        assert OpSubject(OPINFO, variant, sample, E.float64, "refengine",
                         planned).twin("reverse") is None
    finally:
        object.__setattr__(base, "known_failures", ())


def test_a_variant_of_an_op_that_cannot_take_its_sample_is_judged_by_differences():
    import adcheck.refengine as E
    from adcheck.gradcheck import check
    from adcheck.runner.checks import OpSubject
    OPINFO.load_plugins((VARIANT_OPS,))
    variant = OPINFO.get("cli_vsin_right_")
    (sample,) = [s for s in OPINFO.samples(variant, E.float64) if s.index == 0]

    def subject(base):
        object.__setattr__(variant, "variant_of", base)
        return OpSubject(OPINFO, variant, sample, E.float64, "refengine",
                         frozenset({(base, "float64")}))
    try:
        assert subject("no_such_op").twin("reverse") is None
        # an op of two tensors: its call of the variant's sample raises when made
        twin = subject("atan2").twin("reverse")
        call, _ = subject("atan2").call()
        report = check(call.func, call.inputs, precise=True, same_as=twin)
        assert report.passed and "same_as" not in report.jacobians
        assert "same_as raised" in report.jacobians["numerical"].note
    finally:
        object.__setattr__(variant, "variant_of", "cli_vsin")
