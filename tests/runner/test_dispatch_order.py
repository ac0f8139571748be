"""Workers take the longest tasks first (``runner.run.dispatch_order``), by the
measured costs of runner/costs.json, so that a run does not end with one
worker on a long task while the others wait; the report keeps the plan's order."""
from __future__ import annotations

from dataclasses import replace

from adcheck.runner.checks import Policy
from adcheck.runner.registry import OpinfoRegistry
from adcheck.runner.run import dispatch_order, run_tasks
from adcheck.runner.selection import plan, select
from adcheck.runner.shard import cost_table
from adcheck.runner.tasks import Settings, build_settings

from toy_registry import ToyRegistry


def _registry_tasks(patterns=()) -> list:
    registry = OpinfoRegistry()
    settings = build_settings(("reverse", "forward", "gradgrad", "reference"))
    return plan(select(registry, patterns, (), "refengine").infos, None, settings)


def _measured(task) -> int:
    """The task's cost read from the table here, not through the runner's code."""
    costs = cost_table()["costs"][f"{task.op}|{task.dtype}"]
    return sum(int(costs[c]) for c in task.settings.checks)


def test_the_longest_measured_tasks_go_first_on_several_workers():
    tasks = _registry_tasks()
    known = [t for t in tasks if f"{t.op}|{t.dtype}" in cost_table()["costs"]]
    assert len(known) > 0.9 * len(tasks)      # the table covers the registry
    order = dispatch_order(tasks, 2)
    assert sorted(t.index for t in order) == [t.index for t in tasks]
    ranked = [_measured(t) for t in order if t in known]
    assert ranked == sorted(ranked, reverse=True)
    slowest = max(known, key=_measured)
    assert order[0] is slowest and slowest is not tasks[0]


def test_tasks_the_table_has_not_measured_go_first_as_planned():
    tasks = _registry_tasks(("eq", "zero_", "transpose_"))
    renamed = [replace(tasks[0], op="not_measured_b"),
               replace(tasks[1], op="not_measured_a")] + tasks[2:]
    order = dispatch_order(renamed, 2)
    assert [t.op for t in order[:2]] == ["not_measured_b", "not_measured_a"]
    assert [_measured(t) for t in order[2:]] == sorted(map(_measured, order[2:]), reverse=True)


def test_one_worker_runs_the_plan_as_it_is():
    tasks = _registry_tasks()
    assert dispatch_order(tasks, 1) == tasks


def test_a_registry_the_table_did_not_measure_keeps_the_plans_order():
    registry = ToyRegistry()
    settings = Settings(("reverse",), Policy(), timeout=60, registry=registry)
    tasks = plan(select(registry, ()).infos, None, settings)
    assert len(tasks) > 1 and dispatch_order(tasks, 2) == tasks


def test_the_report_keeps_the_plans_order_whatever_ran_first():
    tasks = _registry_tasks(("eq", "isnan", "zero_", "transpose_"))
    assert dispatch_order(tasks, 2) != tasks      # the control: they do run reordered
    outcome = run_tasks(tasks, jobs=2)
    assert outcome.status == "done"
    assert [s.task for s in outcome.samples] == sorted(s.task for s in outcome.samples)
    assert [r.op for r in outcome.results][0] == tasks[0].op
