"""The commands' calls into the runner: load the registry, select, run the
tasks with a progress bar, and hold the outcome as a ``RunReport``.

The runner does the work (``runner``); this module turns the command line's
words into its calls, prints its warnings on stderr, and records the
settings the reports show.
"""
from __future__ import annotations

import sys
import time

from cli.errors import InputError


def load_registry(plugins: tuple = ()):
    """The default registry with the plugin files loaded; a plugin that does not
    load is a usage error."""
    from runner.errors import PluginError
    from runner.registry import OPINFO
    try:
        OPINFO.load_plugins(plugins)
    except PluginError as exc:
        raise InputError(f"{exc}; fix the file or leave out --plugin") from None
    return OPINFO


def plugin_ops(registry, path) -> list:
    """The names of the ops a plugin file adds (loading it once per process)."""
    from runner.errors import PluginError
    try:
        return registry.plugin_ops(path)
    except PluginError as exc:
        raise InputError(f"{exc}; fix the file or leave out --plugin") from None


def select(registry, patterns: tuple, families: tuple, engine: str) -> list:
    """The selected ops (``runner.selection.select``), warning about those
    ``--engine torch`` leaves out."""
    from cli.reporting import warn
    from runner.selection import select as runner_select
    chosen = runner_select(registry, patterns, families, engine)
    if chosen.without_torch:
        warn(f"{len(chosen.without_torch)} selected ops name no torch op and are not checked "
             f"on torch: {', '.join(chosen.without_torch)}")
    return chosen.infos


def recorded(settings, **extra) -> dict:
    """The settings a report records (the ``settings`` object of the JSON)."""
    policy = settings.policy
    return {"engine": policy.engine, "precise": policy.precise,
            "checks": list(settings.checks), "seed": policy.seed,
            "plugins": list(settings.plugins), "timeout": settings.timeout, **extra}


def prestart() -> None:
    """Start a worker process now, so that it imports while this process selects."""
    from runner.pool import shared_pool
    try:
        shared_pool().prestart(1)
    except Exception:  # noqa: BLE001 - the run starts them again and says why it cannot
        pass


def run(command: str, tasks: list, jobs: int, fail_fast: bool, level: int,
        settings_record: dict, planned: list | None = None):
    """Run the tasks in worker processes, with a progress bar on stderr;
    returns the ``RunReport`` (partial when a stop signal came). ``planned``:
    the whole plan ``tasks`` are a shard of (which may then be empty)."""
    from cli import signals
    from cli.reporting import progress_bar, warn
    from runner.results import RunReport
    from runner.run import run_tasks
    if not (tasks if planned is None else planned):
        raise InputError("nothing to check: no selected op supports the selected dtypes; "
                         "widen --dtype or the op patterns")
    start = time.perf_counter()
    try:
        with progress_bar(len(tasks), level >= 0 and sys.stderr.isatty()) as advance:
            outcome = run_tasks(tasks, jobs, fail_fast=fail_fast, progress=advance, warn=warn)
    finally:
        signals.defer()     # the reports are written next: no signal may cut them short
    return RunReport(command, settings_record, outcome.results,
                     interrupted=outcome.status == "interrupted",
                     stopped_early=outcome.status == "stopped",
                     seconds=time.perf_counter() - start, samples=outcome.samples,
                     signal=signals.first() if outcome.status == "interrupted" else None,
                     error=outcome.cause if outcome.status == "broken" else None)


def sweep(infos, dtypes, settings, jobs, fail_fast, level, command="ops", shard=None,
          **extra):
    """Plan and run the tasks of ``infos`` (every sample of each op and dtype);
    ``shard``: ``(k, n)``, run only shard k of n of the plan (``runner.shard``)."""
    from runner.selection import plan
    tasks = plan(infos, dtypes, settings)
    record = recorded(settings, dtypes=dtypes, fail_fast=fail_fast, **extra)
    if shard is None:
        return run(command, tasks, jobs, fail_fast, level, record)
    from runner.shard import record as shard_record
    from runner.shard import shard_tasks
    mine = shard_tasks(tasks, *shard)
    report = run(command, mine, jobs, fail_fast, level, record, planned=tasks)
    report.shard = shard_record(tasks, mine, *shard)
    return report
