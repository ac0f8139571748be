"""A registry other than opinfo plugs into selection, planning and the task
runner through runner.registry.Registry alone, in this process and in the
worker processes alike."""
from __future__ import annotations

import pytest

from adcheck.runner.checks import Policy
from adcheck.runner.errors import RunnerError
from adcheck.runner.run import run_tasks
from adcheck.runner.selection import plan, select
from adcheck.runner.tasks import Settings

from toy_registry import ToyRegistry

TOY = ToyRegistry()


def _statuses(in_process: bool) -> dict:
    settings = Settings(("reverse", "forward"), Policy(precise=True), timeout=60,
                        registry=TOY)
    tasks = plan(select(TOY, ("toy_*",)).infos, None, settings)
    outcome = run_tasks(tasks, jobs=2, in_process=in_process)
    assert outcome.status == "done"
    return {(r.op, r.sample, r.check): r.status for r in outcome.results}


def test_a_second_registry_runs_in_workers_as_in_this_process():
    here, workers = _statuses(True), _statuses(False)
    assert here == workers
    assert {k: v for k, v in here.items() if k[2] == "reverse"} == {
        ("toy_square", 0, "reverse"): "passed", ("toy_square", 1, "reverse"): "passed",
        ("toy_tripled", 0, "reverse"): "failed", ("toy_tripled", 1, "reverse"): "failed"}
    assert {v for k, v in here.items() if k[2] == "forward"} == {"skipped"}


def test_selection_errors_of_a_second_registry_name_the_cause():
    with pytest.raises(RunnerError, match="unknown family 'nope'"):
        select(TOY, (), ("nope",))
    with pytest.raises(RunnerError, match="no toy op named 'toy_nope'"):
        select(TOY, ("toy_nope",))
    settings = Settings(registry=TOY)
    with pytest.raises(RunnerError, match="0 to 1"):
        plan(select(TOY, ("toy_square",)).infos, None, settings, sample=5)
