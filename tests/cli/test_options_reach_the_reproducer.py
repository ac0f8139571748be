"""Every option of ``adcheck ops`` that changes how a check runs reaches the
run's record and rebuilds the same check in the reproducer.

The list of options comes from the Click command itself: an option added to
``ops`` and left out of the three lists below fails the first test, so it
cannot be forgotten by the record or the reproducer. For each option that
changes a check, the command is run with a value other than its default; the
check is then made as a worker makes it (its task, run here) and compared
with the one the printed reproducer rebuilds from the record read back from
JSON: the oracle is the ``settings`` gradcheck itself reports for the check
it ran.
"""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from cli_paths import USER_FUNCTIONS

import adcheck.cli.runs
from adcheck.cli.commands.check import check as check_command
from adcheck.cli.commands.op import op as op_command
from adcheck.cli.commands.ops import ops as ops_command
from adcheck.cli.formats.html import page
from adcheck.runner.reproduction import reproducer
from adcheck.runner.results import RunReport
from adcheck.runner.tasks import run_task

#: the options that change how a check runs, with a value other than the default
CARRIED = {
    "engine": ["--engine", "torch"],
    "precise": ["--torch-tolerances"],
    "seed": ["--seed", "7"],
    "timeout": ["--timeout", "60"],
    "memory_budget": ["--memory-budget", "64"],
    "jacobian": ["--jacobian", "dense"],
    "explore": ["--explore", "--explore-budget", "0.5"],
    "explore_budget": ["--explore", "--explore-budget", "0.25"],
}
#: the options that choose what is checked: each result names its op, dtype,
#: sample and check, and the record its plugins and registry, which the
#: reproducer passes on (tests/runner/test_reproduction.py runs them)
SELECTING = {"patterns", "families", "dtypes", "low_precision", "checks", "registry_name",
             "plugins", "shard"}
#: the options about the run and its outputs, which no single check depends on
AROUND = {"jobs", "fmt", "junit_xml", "baseline", "write_baseline", "fail_fast", "verbose",
          "quiet", "allow_empty", "html"}
#: the options of ``check`` and ``op`` beyond those of ``ops``: what they check (a
#: target and its inputs, in the record; an op and a sample, named by each result)
OWN = {"target", "specs", "args", "plugin", "against", "device_name", "name", "index"}


def test_every_option_of_ops_op_and_check_is_carried_or_said_not_to_change_a_check():
    names = {p.name for p in ops_command.params}
    assert names == set(CARRIED) | SELECTING | AROUND, names ^ (set(CARRIED) | SELECTING | AROUND)
    # --harvest and --max-shapes live in the context, not as parameters of the function
    for command in (check_command, op_command):
        names = {p.name for p in command.params if p.expose_value}
        unknown = names - set(CARRIED) - SELECTING - AROUND - OWN
        assert not unknown, f"options of {command.name} neither carried nor classified: {unknown}"


@pytest.fixture
def planned(run, monkeypatch):
    """``planned(*argv)``: ``(tasks, record)`` of ``adcheck ARGV`` (``ops``'s options
    after ``ops sin``), planned and recorded by the command, not run."""
    seen = {}

    def capture(command, tasks, jobs, fail_fast, level, record, planned=None):
        seen.update(tasks=tasks, record=record)
        return RunReport(command, record, [])
    monkeypatch.setattr(adcheck.cli.runs, "run", capture)
    monkeypatch.setattr(adcheck.cli.runs, "prestart", lambda registry=None: None)

    def plan(*argv):
        command = argv if argv[:1] == ("check",) else ("ops", "sin", "--dtype", "float64",
                                                        "--check", "reverse", *argv)
        run(*command)
        return seen["tasks"], seen["record"]
    return plan


def _rebuilt(result, record: dict):
    """What the printed reproducer rebuilds (its ``rebuild(...)`` call, not run)."""
    code = reproducer(result, record).replace(".check()", "")
    scope: dict = {}
    exec(code.replace("print(report.message())", ""), scope)
    return scope["report"]


@pytest.mark.parametrize("option", sorted(CARRIED))
def test_the_reproducer_rebuilds_the_check_the_run_made(planned, option):
    if option == "engine":
        pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
    tasks, record = planned(*CARRIED[option])
    saved = json.loads(json.dumps(dict(record)))     # as a JSON report holds it
    (task,) = tasks
    outcome = run_task(replace(task, settings=replace(task.settings, keep_reports=True)))
    sample = outcome.samples[0]
    (result,), (report,) = sample.results, sample.reports
    assert result.status == "passed", result.message
    rebuilt = _rebuilt(result, saved)
    ran = {k: v for k, v in report.settings.items() if k != "time_limit"}
    again = {k: v for k, v in rebuilt.options.settings().items() if k != "time_limit"}
    assert again == ran
    # the run's checks plan for the time its timeout leaves them: at most the timeout
    assert report.settings["time_limit"] <= rebuilt.options.time_limit == saved["timeout"]


def test_a_memory_budget_of_64_mib_reaches_the_report_and_the_rebuilt_check(planned):
    tasks, record = planned("--memory-budget", "64")
    assert record["memory_budget"] == 64 * 2**20
    assert "memory budget 64 MiB" in page(RunReport("ops", record, []))
    outcome = run_task(replace(tasks[0], settings=replace(tasks[0].settings,
                                                          keep_reports=True)))
    sample = outcome.samples[0]
    assert sample.reports[0].settings["memory_budget"] == 64 * 2**20
    rebuilt = _rebuilt(sample.results[0], json.loads(json.dumps(dict(record))))
    assert rebuilt.options.memory_budget == 64 * 2**20       # not gradcheck's 512 MiB
    assert "memory_budget=67108864" in reproducer(sample.results[0], record)


def test_the_reproducer_of_a_users_function_rebuilds_the_options_of_its_check(planned):
    (task,), record = planned("check", f"{USER_FUNCTIONS}:GoodExp", "--inputs", "randn(3)",
                              "--check", "reverse", "--memory-budget", "32",
                              "--jacobian", "compressed", "--seed", "3")
    sample = run_task(replace(task, settings=replace(task.settings, keep_reports=True))).samples[0]
    (result,), (report,) = sample.results, sample.reports
    rebuilt = _rebuilt(result, json.loads(json.dumps(dict(record))))
    assert "rebuild_target" in reproducer(result, record)
    ran = {k: v for k, v in report.settings.items() if k != "time_limit"}
    assert {k: v for k, v in rebuilt.options.settings().items() if k != "time_limit"} == ran
    assert (ran["memory_budget"], ran["jacobian"]) == (32 * 2**20, "compressed")


def test_the_default_memory_budget_is_left_out_of_the_reproducer(planned):
    # the record holds the budget the run used (512 MiB when none was given); a
    # reproducer names only what differs from rebuild's defaults, which rebuild it
    tasks, record = planned()
    assert record["memory_budget"] == 512 * 2**20
    outcome = run_task(tasks[0])
    snippet = reproducer(outcome.samples[0].results[0], record)
    assert "memory_budget" not in snippet
    assert _rebuilt(outcome.samples[0].results[0], record).options.memory_budget == 512 * 2**20
