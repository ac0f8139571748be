"""The task runner: one way to run tasks, for ``adcheck ops``, ``op``, ``check``
and the pytest plugin.

``run_tasks(tasks, jobs)`` runs every task (``runner.tasks``) in worker
processes (``runner.pool``: a warm pool, where the death of the code under
check, or a hang in C, is that task's error and nothing else's), or, with
``in_process=True``, here, one after the other (the pytest plugin, whose
tests pytest-xdist can isolate). It returns a ``RunOutcome``: the sample
outcomes in task order, then sample order, so the result does not depend on
``jobs``, and how the run ended (``status``):

- "done": every task ran;
- "stopped": ``fail_fast`` and a task failed;
- "interrupted": Ctrl-C, or a stop signal the caller turns into one (what
  had arrived is kept);
- "broken": the worker processes cannot run the tasks (``cause`` says why,
  once: they cannot start, or cannot load a plugin that loads here).

``progress(task, outcome)`` is called as each task finishes,
``warn(text)`` once per distinct warning, ``on_sample(outcome)`` as each
sample's checks arrive.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from adcheck.runner import tasks as task_module


@dataclass
class RunOutcome:
    """What a run produced: ``samples`` (``SampleOutcome``s in task, then sample
    order), ``status`` (see the module docstring) and, for "broken", ``cause``."""

    samples: list = field(default_factory=list)
    status: str = "done"
    cause: str | None = None

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
                self.warn(task_module.warning_line(text, where))
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


def dispatch_order(tasks: list, jobs: int) -> list:
    """The order to hand ``tasks`` to ``jobs`` workers: longest first by the
    times ``runner.shard``'s table measured (for adcheck's registry), so that
    the run does not end with one worker on a long task while the others wait
    (the results keep the plan's order). Tasks the table has not measured (a
    plugin's ops, one sample) go first, as planned; on one worker, or for
    another registry, the plan's order is kept."""
    from adcheck.runner.shard import cost_table, task_cost
    from adcheck.runner.tasks import OpTask
    table = cost_table()
    if jobs < 2 or not all(isinstance(t, OpTask) and t.settings.registry.name ==
                           table.get("registry", "opinfo") for t in tasks):
        return tasks

    def key(task) -> tuple:
        measured = table.get("costs", {}).get(f"{task.op}|{task.dtype}", {})
        if task.sample is not None or not all(c in measured for c in task.settings.checks):
            return (0, 0, task.index)
        return (1, -task_cost(task, table), task.index)
    return sorted(tasks, key=key)


def run_tasks(tasks: list, jobs: int = 1, *, fail_fast: bool = False, progress=None,
              warn=None, on_sample=None, in_process: bool = False) -> RunOutcome:
    """Run the tasks on up to ``jobs`` worker processes (``in_process``: here)
    and return the outcome."""
    from adcheck.runner.pool import shared_pool
    from adcheck.runner.runloop import run_pool
    tasks = list(tasks)
    collector = _Collector(tasks, fail_fast, progress, warn, on_sample)
    cause = None
    if not tasks:
        status = "done"
    elif in_process:
        status = _serial(tasks, collector)
    else:
        status, cause = run_pool(shared_pool(), dispatch_order(tasks, jobs), jobs, collector)
    outcome = collector.outcome(status)
    outcome.cause = cause
    return outcome
