"""Tasks: the unit of work a worker runs, and running one.

An ``OpTask`` is one op of a registry in one dtype (every sample, or the one
``sample`` asked for); a ``TargetTask`` is one input spec of a user's object
(``adcheck check MODULE:OBJECT``). ``execute(task, emit)`` runs it: it makes
each sample, runs its checks (``runner.checks.run_checks``) and hands
``emit`` one ``SampleOutcome`` per sample as soon as it is done, so a run
that stops keeps every sample already checked. It never raises an
``Exception``: a task that cannot make its samples, or runs past
``settings.timeout``, ends with a task-level "setup" error.
"""
from __future__ import annotations

import contextlib
import time
import warnings
from dataclasses import dataclass, field

from adcheck.gradcheck.api import recording_faults
from adcheck.runner.checks import DEFAULT_CHECKS, FAULTS, Policy, fault_text, run_checks
from adcheck.runner.deadline import TaskTimeout, deadline
from adcheck.runner.registry import OPINFO
from adcheck.runner.results import TASK_CHECK, CheckResult
from adcheck.runner.tracebacks import user_traceback


@dataclass(frozen=True)
class Settings:
    """What every task needs to know; picklable, sent to the workers.

    ``registry``: where the ops come from (``runner.registry``);
    ``keep_reports``: also return gradcheck's full ``Report`` of each check
    (``adcheck op`` and the pytest plugin show them); ``planned``: the ``(op,
    dtype)`` pairs a sweep checks in full in this run, where an in-place
    variant of one of them is compared with it (``runner.checks.OpSubject.twin``).
    """

    checks: tuple = DEFAULT_CHECKS
    policy: Policy = field(default_factory=Policy)
    timeout: float | None = None
    plugins: tuple = ()
    registry: object = OPINFO
    keep_reports: bool = False
    planned: frozenset = frozenset()


def build_settings(checks: tuple = DEFAULT_CHECKS, *, engine: str = "refengine",
                   precise: bool = True, seed: int = 0, timeout: float | None = None,
                   memory_budget: int | None = None, jacobian: str = "auto",
                   explore: float | None = None, batching: bool = True, plugins: tuple = (),
                   registry=None, keep_reports: bool = False) -> Settings:
    """The ``Settings`` of a run, its options validated here, in the process that
    plans it: ``RunnerError`` names a bad value before any worker starts.
    ``memory_budget`` in bytes (``None``: gradcheck's default); ``explore``: its
    budget in seconds (0: the default), ``None``: off; ``registry``: default
    adcheck's own. How ``adcheck ops``, ``op``, ``check`` and the pytest marker
    make their runs (``RunRecord.of`` records them)."""
    from adcheck.runner.errors import RunnerError
    try:
        policy = Policy(precise, engine, seed, memory_budget, explore, jacobian, batching)
    except ValueError as exc:
        raise RunnerError(str(exc).removeprefix("check: ")) from None
    return Settings(tuple(checks), policy, timeout, tuple(str(p) for p in plugins),
                    OPINFO if registry is None else registry, keep_reports)


@dataclass(frozen=True)
class OpTask:
    """One op of ``settings.registry`` in one dtype; ``sample``: only that sample."""

    index: int
    op: str
    dtype: str
    settings: Settings
    sample: int | None = None


@dataclass(frozen=True)
class TargetTask:
    """``adcheck check MODULE:OBJECT``: one input spec of the user's object."""

    index: int
    op: str            # the MODULE:OBJECT text
    inputs: str        # the input spec (see runner.spec)
    engine: str        # engine of a plain function
    settings: Settings
    name: str = ""     # the object's name, as its results carry it

    @property
    def dtype(self) -> str:
        from adcheck.runner.spec import EXAMPLE_LABEL, example_keywords, parse
        if example_keywords(self.inputs) is not None:
            return EXAMPLE_LABEL
        return "+".join(dict.fromkeys(s.dtype for s in parse(self.inputs)))


@dataclass
class SampleOutcome:
    """The checks of one sample (``sample`` None: a task-level error), as they
    leave the worker. ``reports`` holds the gradcheck ``Report`` of each result
    when the settings keep them, else ``None``s; ``description`` names the
    sample's tensors and other arguments, ``name`` is the sample's own name."""

    task: int
    dtype: str
    sample: int | None
    results: list = field(default_factory=list)
    reports: list = field(default_factory=list)
    description: str = ""
    name: str = ""


@dataclass
class TaskOutcome:
    """A finished task: its samples in order, and the warnings it raised
    (``[(text, where)]``)."""

    index: int
    samples: list = field(default_factory=list)
    warnings: list = field(default_factory=list)

    @property
    def results(self) -> list:
        return [r for s in self.samples for r in s.results]


def describe_sample(sample) -> str:
    """``(3, 4), (4,) const; dim=1``: the tensors' shapes, then the other arguments."""
    tensors = sample.tensors() if hasattr(sample, "tensors") else []
    shapes = ", ".join(f"{tuple(t.shape)}{'' if t.requires_grad else ' const'}"
                       for t in tensors)
    others = [repr(a) for a in getattr(sample, "args", ()) if not hasattr(a, "shape")]
    others += [f"{k}={v!r}" for k, v in getattr(sample, "kwargs", {}).items()
               if not hasattr(v, "shape")]
    return shapes + (f"; {', '.join(others)}" if others else "")


def _op_samples(task: OpTask, emit, progress: dict) -> None:
    from adcheck.runner.checks import check_sample
    settings = task.settings
    registry = settings.registry
    info = registry.get(task.op)
    progress["family"] = info.family
    dtype = registry.dtype(task.dtype)
    for sample in registry.samples(info, dtype, task.sample):
        with recording_faults() as faults:
            pairs = check_sample(info, sample, dtype, settings, settings.keep_reports)
        _add_tracebacks([r for r, _ in pairs], faults)
        emit(SampleOutcome(task.index, task.dtype, sample.index, [r for r, _ in pairs],
                           [p for _, p in pairs], describe_sample(sample), sample.name))
        progress["done"] += 1


def _target_samples(task: TargetTask, emit, progress: dict) -> None:
    from adcheck.runner.subjects import target_subject
    policy = task.settings.policy
    subject = target_subject(task.op, task.inputs, task.engine, policy.seed, task.index)
    progress["family"] = subject.target.kind
    finished: list = []
    try:
        with recording_faults() as faults:
            run_checks(subject, task.settings.checks, policy, task.settings.keep_reports,
                       finished)
    except TaskTimeout:
        # (the checks that ended before it are kept: reverse's failure found in 19 s was
        # dropped with the gradgrad check that timed out at 300 s)
        progress["kept"] = len(finished)
        _emit_target(task, emit, finished)
        raise
    _add_tracebacks([r for r, _ in finished], faults)
    _emit_target(task, emit, finished)


def _emit_target(task: TargetTask, emit, pairs: list) -> None:
    if pairs:
        emit(SampleOutcome(task.index, task.dtype, task.index, [r for r, _ in pairs],
                           [p for _, p in pairs], task.inputs, task.inputs))


def execute(task, emit) -> list:
    """Run one task, handing ``emit`` each ``SampleOutcome``; returns the
    warnings it raised as ``[(text, where)]``. Never raises an ``Exception``."""
    start = time.perf_counter()
    progress = {"family": "", "done": 0}     # the op's family, the samples checked
    is_op = isinstance(task, OpTask)
    found: list = []
    with recorded_warnings(f"{task.op} {task.dtype}" if is_op else task.op, found):
        message = trace = None
        try:
            with deadline(task.settings.timeout), _time_limits(task.settings):
                (_op_samples if is_op else _target_samples)(task, emit, progress)
        except TaskTimeout as exc:
            from adcheck.runner.stages import kept_text, timeout_text
            done, kept = progress["done"], progress.get("kept", 0)
            message = timeout_text(exc, exc.seconds) + (
                f"; {done} samples were checked before it" if is_op else kept_text(kept))
        except FAULTS as exc:  # making the samples, or the user's code
            message = (f"could not make its samples: {fault_text(exc)}" if is_op
                       else fault_text(exc))
            trace = user_traceback(exc)
        if message is not None:
            error = task_error(task, message, start, progress["family"])
            error.traceback = trace
            emit(SampleOutcome(task.index, task.dtype, None, [error], [None]))
    return found


def _add_tracebacks(results: list, faults: list) -> None:
    """Give each error among ``results`` the user's frames of the exception
    ``gradcheck.check`` raised for it (the one whose text its message is)."""
    for result in results:
        if result.status != "error" or result.traceback is not None:
            continue
        raised = next((exc for exc in faults if fault_text(exc) == result.message), None)
        if raised is not None:
            result.traceback = user_traceback(raised)


def _time_limits(settings: Settings):
    """Every check of the task takes the time left before the task's timeout as
    its ``time_limit`` (what ``jacobian="auto"`` plans for)."""
    from adcheck.gradcheck.core.options import caller_defaults
    deadline_at = None if not settings.timeout else time.monotonic() + settings.timeout
    return caller_defaults(deadline=deadline_at)


def run_task(task) -> TaskOutcome:
    """``execute`` collecting the samples into one ``TaskOutcome``."""
    outcome = TaskOutcome(task.index)
    outcome.warnings = execute(task, outcome.samples.append)
    return outcome


#: warnings about the libraries themselves, not about the code under check
_NOISE = (DeprecationWarning, PendingDeprecationWarning, ImportWarning)


@contextlib.contextmanager
def recorded_warnings(where: str, found: list):
    """Record the warnings raised inside into ``found``, ``[(text, where)]`` once
    per distinct text (``warning_texts``), instead of printing each as it is
    raised: the code under check runs once per evaluation of each check, and a
    warning of its own would print as often. Shown with ``warning_line``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        try:
            yield
        finally:
            found.extend(warning_texts(caught, where))


def warning_line(text: str, where: str) -> str:
    """How a run shows a recorded warning, once: with where it was first seen."""
    return f"{text} (first seen on {where})"


def warning_texts(caught: list, where: str) -> list:
    """``[(text, where)]`` for each distinct warning worth showing."""
    texts = dict.fromkeys(f"{w.category.__name__}: {' '.join(str(w.message).split())}"
                          for w in caught if not issubclass(w.category, _NOISE))
    return [(text, where) for text in texts]


def task_error(task, message: str, start: float, family: str = "") -> CheckResult:
    """A task-level error (check "setup", no sample) of ``task``."""
    name = getattr(task, "name", "") or task.op
    return CheckResult(name, task.dtype, None, TASK_CHECK, "error", " ".join(message.split()),
                       seconds=time.perf_counter() - start, family=family)
