"""The task runner: one way to run tasks, for ``adcheck ops``, ``op``, ``check``
and the pytest plugin.

``run_tasks(tasks, jobs)`` runs every task (``runner.tasks``) and returns a
``RunOutcome``: the sample outcomes in task order, then sample order, so the
result does not depend on ``jobs``, and how the run ended (``status``):

- "done": every task ran;
- "stopped": ``fail_fast`` and a task failed;
- "interrupted": Ctrl-C (what had arrived is kept);
- "stalled": the worker processes stopped reporting (the tasks without a
  result are errors saying so).

``progress(task, outcome)`` is called as each task finishes,
``warn(text)`` once per distinct warning, ``on_sample(outcome)`` as each
sample's checks arrive.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from runner import tasks as task_module
from runner.pool import run_tasks as pool_run


@dataclass
class RunOutcome:
    """What a run produced: ``samples`` (``SampleOutcome``s in task, then sample
    order) and ``status`` (see the module docstring)."""

    samples: list = field(default_factory=list)
    status: str = "done"

    @property
    def results(self) -> list:
        """Every ``CheckResult``, in order."""
        return [r for s in self.samples for r in s.results]


class _Collector:
    """Receives samples and finished tasks, in any order, and keeps them in order."""

    def __init__(self, tasks: list, fail_fast: bool, progress, warn, on_sample):
        self.by_index = {t.index: t for t in tasks}
        self.samples: dict = {}
        self.finished: set = set()
        self.seen_warnings: set = set()
        self.fail_fast, self.progress, self.warn = fail_fast, progress, warn
        self.on_sample = on_sample

    def sample(self, outcome) -> None:
        self.samples.setdefault(outcome.task, []).append(outcome)
        if self.on_sample is not None:
            self.on_sample(outcome)

    def done(self, index: int, warnings: list) -> bool:
        """Record a finished task; False when the run should stop (fail-fast)."""
        self.finished.add(index)
        for text, where in warnings:
            if self.warn is not None and text not in self.seen_warnings:
                self.seen_warnings.add(text)
                self.warn(f"{text} (first seen on {where})")
        outcome = task_module.TaskOutcome(index, self.samples.get(index, []), warnings)
        if self.progress is not None:
            self.progress(self.by_index[index], outcome)
        return not (self.fail_fast and any(r.failing for r in outcome.results))

    def outcome(self, status: str) -> RunOutcome:
        ordered = [s for i in sorted(self.samples) for s in self.samples[i]]
        return RunOutcome(ordered, status)


def _serial(tasks: list, collector: _Collector) -> str:
    try:
        for task in tasks:
            warnings = task_module.execute(task, collector.sample)
            if not collector.done(task.index, warnings):
                return "stopped"
    except KeyboardInterrupt:
        return "interrupted"
    return "done"


def _load_plugins(registry, paths: tuple) -> None:
    """Worker initializer: register the plugin files' ops."""
    registry.load_plugins(paths)


def _in_pool(tasks: list, jobs: int, collector: _Collector) -> str:
    def on_done(outcome) -> bool:
        for sample in outcome.samples:
            collector.sample(sample)
        return collector.done(outcome.index, outcome.warnings)

    settings = tasks[0].settings
    timeouts = [t.settings.timeout for t in tasks if t.settings.timeout]
    stall = 2 * max(timeouts) + 60 if timeouts else None
    return pool_run(tasks, task_module.run_task, jobs, on_done, initializer=_load_plugins,
                    initargs=(settings.registry, settings.plugins), stall_seconds=stall)


def run_tasks(tasks: list, jobs: int = 1, *, fail_fast: bool = False, progress=None,
              warn=None, on_sample=None, in_process: bool | None = None) -> RunOutcome:
    """Run the tasks and return the outcome. ``in_process``: run them here, one
    after the other (default: when ``jobs`` is 1 or there is one task)."""
    tasks = list(tasks)
    collector = _Collector(tasks, fail_fast, progress, warn, on_sample)
    if in_process is None:
        in_process = jobs <= 1 or len(tasks) <= 1
    if in_process:
        status = _serial(tasks, collector)
    else:
        status = _in_pool(tasks, jobs, collector)
    outcome = collector.outcome(status)
    if status == "stalled":
        start = time.perf_counter()
        missing = [t for t in tasks if t.index not in collector.finished]
        outcome.samples += [task_module.SampleOutcome(t.index, t.dtype, None, [
            task_module.task_error(t, "no result: its worker process died or hung (rerun "
                                   "with --jobs 1 to see why)", start)], [None])
            for t in missing]
    return outcome
