"""The sweep: which (op, dtype) tasks to run, running one, and running them all.

A task is one op on one dtype; the worker makes every sample of it (each
drawn from the op's stable per-sample seed) and runs each requested check
on each sample. Check seeds derive from ``--seed``, the op, dtype, sample
and check, so any ``--jobs`` gives the same results. ``sweep()`` runs the
tasks through ``cli.pool``, reports progress, and returns the results in
task order with the pool's status ("done", "stopped", "interrupted",
"stalled").
"""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

from cli import checkrun
from cli.pool import TaskTimeout, deadline, run_tasks
from cli.results import JACOBIAN_PAIRS, TASK_CHECK, CheckResult


@dataclass(frozen=True)
class Settings:
    """What every task needs to know; picklable, sent to the workers."""

    checks: tuple = checkrun.DEFAULT_CHECKS
    policy: checkrun.Policy = field(default_factory=checkrun.Policy)
    timeout: float | None = None
    plugins: tuple = ()


@dataclass(frozen=True)
class Task:
    index: int
    op: str
    dtype: str
    settings: Settings


@dataclass
class Outcome:
    """What a worker sends back for one task."""

    index: int
    results: list = field(default_factory=list)
    warnings: list = field(default_factory=list)


def dtype_named(name: str):
    import refengine
    return getattr(refengine, name)


def plan(infos: list, dtypes: list[str] | None, settings: Settings) -> list[Task]:
    """One task per op and dtype, in registry order. ``dtypes`` None: the
    op's double-precision dtypes (float64, complex128)."""
    tasks = []
    for info in infos:
        names = [str(d).rsplit(".", 1)[-1] for d in info.dtypes]
        chosen = [n for n in names if (n in dtypes if dtypes else n in ("float64", "complex128"))]
        for name in chosen:
            tasks.append(Task(len(tasks), info.name, name, settings))
    return tasks


def check_sample(info, sample, dtype, settings: Settings, keep_reports: bool = False) -> list:
    """Every check of ``settings`` on one sample: ``[(CheckResult, Report or None)]``."""
    from cli.samplecall import SampleCall
    policy = settings.policy
    dname = str(dtype).rsplit(".", 1)[-1]
    base = CheckResult(info.name, dname, sample.index, TASK_CHECK, "error",
                       family=info.family, sample_name=sample.name or repr(sample))
    try:
        call = SampleCall(info, sample, policy.engine)
        nan = call.nan_outputs() if call.inputs else None
    except Exception as exc:  # noqa: BLE001 - the op itself raised
        base.message = f"the op raised {type(exc).__name__}: {' '.join(str(exc).split())}"
        return [(base, None)]
    if nan is not None:
        base.message = nan
        return [(base, None)]
    out = []
    for check in settings.checks:
        reason = checkrun.skip_reason(info, check, dtype, call)
        if reason is not None:
            skipped = CheckResult(info.name, dname, sample.index, check, "skipped", reason,
                                  family=info.family, sample_name=base.sample_name)
            out.append((skipped, None))
            continue
        kwargs = checkrun.options(check, policy, info.tolerance(dtype),
                                  info.supports("forward", dtype), call.reference)
        seed = checkrun.derive_seed(policy.seed, info.name, dname, sample.index, check)
        known = checkrun.known_failure(info, check, dtype, sample, policy.engine)
        result, report = checkrun.run(call.func, call.inputs, info.name, check, kwargs, seed,
                                      base, known)
        keep_evidence(result, report, kwargs)
        out.append((result, report if keep_reports else None))
    return out


def keep_evidence(result: CheckResult, report, kwargs: dict) -> None:
    """Give a failed ``result`` what the HTML report draws: the Jacobians of
    its first failing pairs and the keywords that reproduce it (small and
    picklable: the reference function itself stays behind)."""
    if report is None or not result.failures:
        return
    import numpy as np
    result.jacobians = [(f.expected, f.actual) if np.ndim(f.expected) == np.ndim(f.actual) == 2
                        else None for f in report.failures[:JACOBIAN_PAIRS]]
    result.check_kwargs = {k: True if k == "reference" else v for k, v in kwargs.items()}


def load_plugins(paths: tuple) -> None:
    """Worker initializer: register the plugin files' OpInfos."""
    import opinfo
    for path in paths:
        opinfo.load_plugin(path)


def run_task(task: Task) -> Outcome:
    """Run every sample and check of one (op, dtype); never raises an Exception."""
    import opinfo
    outcome = Outcome(task.index)
    start = time.perf_counter()
    family = ""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        try:
            with deadline(task.settings.timeout):
                info = opinfo.get(task.op)
                family = info.family
                dtype = dtype_named(task.dtype)
                for sample in info.sample_inputs(dtype, requires_grad=True):
                    outcome.results += [r for r, _ in check_sample(info, sample, dtype,
                                                                   task.settings)]
        except TaskTimeout as exc:
            done = len({r.sample for r in outcome.results})
            outcome.results.append(_task_error(task, f"{exc} (--timeout); {done} samples "
                                               "were checked before it", start, family))
        except Exception as exc:  # noqa: BLE001 - making the samples failed
            outcome.results.append(_task_error(
                task, f"could not make its samples: {type(exc).__name__}: {exc}", start,
                family))
    outcome.warnings = _warning_texts(caught, f"{task.op} {task.dtype}")
    return outcome


#: warnings about the libraries themselves, not about the code under check
_NOISE = (DeprecationWarning, PendingDeprecationWarning, ImportWarning)


def _warning_texts(caught: list, where: str) -> list:
    """``[(text, where)]`` for each distinct warning worth showing."""
    texts = dict.fromkeys(f"{w.category.__name__}: {' '.join(str(w.message).split())}"
                          for w in caught if not issubclass(w.category, _NOISE))
    return [(text, where) for text in texts]


def _task_error(task, message: str, start: float, family: str = "") -> CheckResult:
    return CheckResult(task.op, task.dtype, None, TASK_CHECK, "error",
                       " ".join(message.split()), seconds=time.perf_counter() - start,
                       family=family)


def sweep(tasks: list, work, jobs: int, fail_fast: bool = False, progress=None,
          warn=None, plugins: tuple = ()) -> tuple[list, str]:
    """Run ``work`` (``run_task`` or another picklable task function) on the
    tasks; returns ``(results in task order, pool status)``.

    ``progress(task, outcome)`` is called as each task finishes, ``warn(text)``
    once for each distinct warning.
    """
    outcomes: dict = {}
    seen_warnings: set = set()
    by_index = {t.index: t for t in tasks}

    def on_done(outcome: Outcome) -> bool:
        outcomes[outcome.index] = outcome
        for text, where in outcome.warnings:
            if warn is not None and text not in seen_warnings:
                seen_warnings.add(text)
                warn(f"{text} (first seen on {where})")
        if progress is not None:
            progress(by_index[outcome.index], outcome)
        return not (fail_fast and any(r.failing for r in outcome.results))

    timeouts = [t.settings.timeout for t in tasks if t.settings.timeout]
    stall = 2 * max(timeouts) + 60 if timeouts else None
    status = run_tasks(tasks, work, jobs, on_done, initializer=load_plugins,
                       initargs=(plugins,), stall_seconds=stall)
    results = [r for i in sorted(outcomes) for r in outcomes[i].results]
    if status == "stalled":
        missing = [t for t in tasks if t.index not in outcomes]
        results += [_task_error(t, "no result: its worker process died or hung "
                                "(rerun with --jobs 1 to see why)", time.perf_counter())
                    for t in missing]
    return results, status


@dataclass(frozen=True)
class TargetTask:
    """``adcheck check MODULE:OBJECT``: one input spec of the user's object."""

    index: int
    op: str            # the MODULE:OBJECT text
    inputs: str        # the input spec (see cli.spec)
    engine: str        # engine of a plain function
    settings: Settings

    @property
    def dtype(self) -> str:
        from cli.spec import parse
        return "+".join(dict.fromkeys(s.dtype for s in parse(self.inputs)))


def _target_results(task: TargetTask) -> list:
    import numpy as np

    from cli.spec import build, parse
    from cli.target import resolve
    target = resolve(task.op, task.engine)
    policy = task.settings.policy
    rng = np.random.default_rng(checkrun.derive_seed(policy.seed, "inputs", task.index))
    inputs = build(parse(task.inputs), target.engine, rng)
    base = CheckResult(target.name, task.dtype, task.index, TASK_CHECK, "error",
                       family=target.kind, sample_name=task.inputs)
    results = []
    for check in task.settings.checks:
        reason = ("the target defines no jvp" if check in ("forward", "fwgrad_bwgrad")
                  and not target.has_jvp else
                  "a user function has no mpmath reference" if check == "reference" else None)
        if reason is not None:
            results.append(CheckResult(target.name, task.dtype, task.index, check, "skipped",
                                       reason, family=target.kind, sample_name=task.inputs))
            continue
        kwargs = checkrun.options(check, policy, None, target.has_jvp)
        seed = checkrun.derive_seed(policy.seed, task.op, task.index, check)
        result, report = checkrun.run(target.func, inputs, target.name, check, kwargs, seed,
                                      base)
        keep_evidence(result, report, kwargs)
        results.append(result)
    return results


def run_target(task: TargetTask) -> Outcome:
    """Run every check on one input spec of a user's object; never raises."""
    outcome = Outcome(task.index)
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        try:
            with deadline(task.settings.timeout):
                outcome.results = _target_results(task)
        except TaskTimeout as exc:
            outcome.results.append(_task_error(task, f"{exc} (--timeout)", start))
        except Exception as exc:  # noqa: BLE001 - the user's code raised
            outcome.results.append(_task_error(task, f"{type(exc).__name__}: {exc}", start))
    outcome.warnings = _warning_texts(caught, task.op)
    return outcome
