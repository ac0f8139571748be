"""A run's options are validated where it is planned, recorded in one
``RunRecord`` that reads back from JSON unchanged, and batching is one of
them: a run without it builds every Jacobian one vector at a time, with the
same verdicts, and its reproducer says so."""
from __future__ import annotations

import json

import pytest

from adcheck import runner
from adcheck.runner.errors import RunnerError
from adcheck.runner.record import RunRecord
from adcheck.runner.registry import OPINFO
from adcheck.runner.reproduction import reproducer
from adcheck.runner.run import run_tasks
from adcheck.runner.selection import plan, select
from adcheck.runner.tasks import build_settings


@pytest.mark.parametrize("bad, named", [
    ({"memory_budget": 1000}, "memory_budget"),
    ({"jacobian": "sparse"}, "jacobian"),
    ({"explore": -1.0}, "explore_budget"),
    ({"batching": "no"}, "batching"),
])
def test_a_bad_option_is_refused_where_the_run_is_planned(bad, named):
    with pytest.raises(RunnerError, match=named):
        build_settings(("reverse",), **bad)


def test_the_record_reads_back_from_json_as_written():
    settings = build_settings(("reverse", "forward"), engine="torch", precise=False, seed=4,
                              timeout=60.0, memory_budget=64 * 2**20, jacobian="probed",
                              explore=2.0, batching=False)
    record = RunRecord.of(settings, dtypes=["float64"], patterns=["sin"], fail_fast=True)
    again = RunRecord.from_dict(json.loads(json.dumps(dict(record))))
    assert again == record
    assert (again.memory_budget, again.jacobian, again.explore, again.batching) == \
        (64 * 2**20, "probed", 2.0, False)
    assert again["checks"] == ["reverse", "forward"] and again.get("kind") is None


@pytest.fixture(scope="module")
def runs() -> dict:
    """``{batching: [(CheckResult, Report)]}`` of one run with batching and one without."""
    found = {}
    for batching in (True, False):
        settings = build_settings(("reverse", "forward"), batching=batching, keep_reports=True)
        tasks = plan(select(OPINFO, ("sin", "mul")).infos, ["float64"], settings)
        outcome = run_tasks(tasks, in_process=True)
        found[batching] = [(r, report) for s in outcome.samples
                           for r, report in zip(s.results, s.reports)]
    return found


def test_batching_off_builds_jacobians_one_vector_at_a_time_with_the_same_verdicts(runs):
    on, off = runs[True], runs[False]
    assert [(r.key, r.status) for r, _ in on] == [(r.key, r.status) for r, _ in off]
    assert all(report.batching["batched_calls"] == 0 for _, report in off)
    assert sum(report.batching["batched_calls"] for _, report in on) > 0


def test_the_reproducer_of_a_run_without_batching_rebuilds_it_without(runs):
    (result, report), *_ = runs[False]
    record = RunRecord.of(build_settings(("reverse", "forward"), batching=False))
    code = reproducer(result, record)
    assert "batching=False" in code
    rebuilt = runner.rebuild(result.op, result.dtype, result.sample, result.check,
                             batching=False)
    assert rebuilt.options.batching is False and rebuilt.check().batching["batched_calls"] == 0
