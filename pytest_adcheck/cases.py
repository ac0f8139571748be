"""The registry as test parameters: one ``OpCase`` per OpInfo, dtype and sample.

``plan_cases`` reads the ``adcheck_ops`` marker's selection (name patterns,
families, dtypes, checks, engine, and the registry: adcheck's own, or
``"torch"`` for PyTorch's op_db) and returns the cases in registry order, then
dtype, then sample index, so every pytest-xdist worker collects the same
ids in the same order. The selection is ``adcheck ops``'s
(``runner.selection``), and a case runs its checks through the runner's
task runner, in this process (pytest-xdist isolates), with the same
per-check seeds: a case fails here exactly when ``adcheck ops`` reports it.
"""
from __future__ import annotations

from dataclasses import replace

import pytest

from pytest_adcheck.threads import checking


class SelectionError(Exception):
    """The marker selects nothing, or names an unknown op, family, dtype or check."""


def _names(value, what: str) -> tuple:
    """A marker keyword given as one string or an iterable of them (or of dtypes)."""
    if value is None:
        return ()
    items = [value] if isinstance(value, str) or not hasattr(value, "__iter__") else value
    names = tuple(str(v).rsplit(".", 1)[-1] for v in items)
    if not all(names):
        raise SelectionError(f"{what}: empty name in {value!r}")
    return names


def _checked(names: tuple, allowed: tuple, what: str) -> tuple:
    unknown = [n for n in names if n not in allowed]
    if unknown:
        raise SelectionError(f"unknown {what} {', '.join(map(repr, unknown))}; choose from "
                             f"{', '.join(allowed)}")
    return names


#: the engines whose formulas a marker can check
ENGINES = ("refengine", "torch")


def settings_for(checks: tuple, seed: int, engine: str | None = None, plugins: tuple = (),
                 registry=None, explore=None):
    """The runner's ``Settings`` for these checks (none: the registry's defaults,
    else the CLI's) on ``engine`` (default: the registry's own, else refengine)
    and ``registry`` (default: adcheck's own); ``plugins``: the plugin files
    loaded (the reproducers load them); ``explore``: the policy's (seconds, 0
    for the default budget, ``"quick"`` for the quick pass, or ``None``)."""
    from adcheck.runner.checks import CHECK_NAMES, DEFAULT_CHECKS
    from adcheck.runner.errors import RunnerError
    from adcheck.runner.registry import OPINFO
    from adcheck.runner.tasks import build_settings
    registry = OPINFO if registry is None else registry
    defaults = registry.default_checks or DEFAULT_CHECKS
    chosen = _checked(checks, CHECK_NAMES, "check") if checks else tuple(defaults)
    engine = engine or registry.engine or "refengine"
    try:
        return build_settings(chosen, engine=engine, seed=seed, explore=explore,
                              plugins=plugins, registry=registry, keep_reports=True)
    except RunnerError as exc:
        raise SelectionError(str(exc)) from None


def _torch_only(dtype_names: tuple, engine: str | None) -> None:
    """``SelectionError`` for a dtype only torch has (bfloat16, float16) asked of
    another engine."""
    from adcheck.runner.registry import TORCH_ONLY
    only = [n for n in dtype_names if n in TORCH_ONLY and engine != "torch"]
    if only:
        raise SelectionError(f"dtypes {', '.join(map(repr, only))} exist on torch only "
                             "(refengine has float32, float64, complex64 and complex128); "
                             "add engine='torch'")


def _engine(engine, registry) -> str | None:
    """The marker's ``engine=``, checked (a registry that runs on one engine only
    takes no other)."""
    fixed = registry.engine
    if engine is None:
        return fixed
    if engine not in ENGINES:
        raise SelectionError(f"engine={engine!r}: choose from {', '.join(map(repr, ENGINES))}")
    if fixed is not None and engine != fixed:
        raise SelectionError(f"engine={engine!r}: registry {registry.name!r} runs on "
                             f"{fixed!r} only; leave out engine=")
    if engine == "torch":
        import importlib.util
        if importlib.util.find_spec("torch") is None:
            raise SelectionError("engine='torch' needs PyTorch, which is not installed; "
                                 "install it with 'pip install adcheck[torch]'")
    return engine


def _registry(name: str):
    from adcheck.runner.errors import RunnerError
    from adcheck.runner.registry import named
    try:
        return named(str(name))
    except RunnerError as exc:
        raise SelectionError(str(exc)) from None


def _selected(settings, patterns: tuple, family) -> list:
    from adcheck.runner.errors import RunnerError
    from adcheck.runner.selection import select
    try:
        chosen = select(settings.registry, tuple(patterns), _names(family, "family"),
                        settings.policy.engine)
    except RunnerError as exc:
        raise SelectionError(str(exc)) from None
    if not chosen.infos:
        raise SelectionError("selects no op: no op matches both the name patterns and the "
                             "families" + (" and names a torch op (torch_name)"
                                           if chosen.without_torch else ""))
    return chosen.infos


def _explore(value):
    """The marker's ``explore=``: ``"quick"`` (the default: the quick pass, as
    ``adcheck ops``), False (off), True (the default budget) or a budget in
    seconds, as the runner's policy holds it."""
    if value == "quick":
        return "quick"
    if value is False or value is None:
        return None
    if value is True:
        return 0.0
    if isinstance(value, (int, float)) and not isinstance(value, bool) \
            and 0 < value < float("inf"):
        return float(value)
    raise SelectionError(f"explore= takes True, False, 'quick' or a budget in seconds > 0, not "
                         f"{value!r}")


def plan_cases(patterns: tuple, family=None, dtypes=None, checks=None, seed: int = 0,
               engine: str | None = None, plugins: tuple = (), shard=None,
               registry: str = "opinfo", explore="quick") -> list:
    """The ``OpCase``s the marker ``adcheck_ops(*patterns, family=, dtypes=, checks=,
    engine=, registry=)`` selects (``engine="torch"``: torch's own formulas, for
    the ops that name a torch op; ``registry="torch"``: PyTorch's op_db);
    ``shard``: ``(k, n)``, only the tasks of shard k of n, as ``adcheck ops
    --shard k/n`` runs them. ``SelectionError`` when it selects nothing or names
    something unknown."""
    from adcheck.runner.selection import plan
    registry = _registry(registry)
    known = registry.dtype_names
    dtype_names = _checked(_names(dtypes, "dtypes"), known, "dtype")
    engine = _engine(engine, registry)
    _torch_only(dtype_names, engine)
    settings = settings_for(_names(checks, "checks"), seed, engine, plugins, registry,
                            _explore(explore))
    tasks = plan(_selected(settings, patterns, family), list(dtype_names) or None, settings)
    if shard is not None:
        from adcheck.runner.shard import shard_tasks
        tasks = shard_tasks(tasks, *shard)
    cases = []
    for task in tasks:
        info = registry.get(task.op)
        names = registry.sample_names(info, registry.dtype(task.dtype))
        cases += [OpCase(task.op, task.dtype, i, name, settings) for i, name in enumerate(names)]
    if not cases and shard is None:
        raise SelectionError("selects no sample: no selected op supports the selected "
                             "dtypes; widen the patterns or dtypes")
    return cases


class OpCase:
    """One sample of one OpInfo in one dtype: what an ``adcheck_case`` test receives.

    ``id`` is ``"<op>-<dtype>-sample<index>"``; ``op`` is the ``OpInfo``,
    ``dtype`` the refengine dtype, ``sample`` the ``SampleInput`` (made on
    first use, with its inputs requiring grad) and ``call`` the sample as a
    function of its differentiable tensors (``call.func``, ``call.inputs``),
    to check it your own way: ``assert_gradients(case.call.func,
    case.call.inputs, check_forward_ad=True)``.

    ``run()`` runs the checks; ``assert_passes()`` asserts on them.
    """

    def __init__(self, op_name: str, dtype_name: str, index: int, sample_name: str,
                 settings):
        self.op_name, self.dtype_name, self.index = op_name, dtype_name, index
        self.sample_name = sample_name
        self.settings = settings
        self._sample = None
        #: after ``assert_passes``: ``(judged, skip reasons, every skip declared by the
        #: op)``; the plugin gathers it
        #: per op, so an op whose every case was skipped fails the session
        self.verdict = None

    @property
    def id(self) -> str:
        """The test id: ``sin-float64-sample3``."""
        return f"{self.op_name}-{self.dtype_name}-sample{self.index}"

    @property
    def checks(self) -> tuple:
        """The check names ``run()`` runs by default (see ``gradcheck.core.modes``)."""
        return self.settings.checks

    @property
    def op(self):
        """The ``OpInfo``."""
        return self.settings.registry.get(self.op_name)

    @property
    def dtype(self):
        """The dtype (refengine's, or torch's for PyTorch's op_db)."""
        return self.settings.registry.dtype(self.dtype_name)

    @property
    def sample(self):
        """The ``SampleInput``, rebuilt from its own seed, inputs requiring grad."""
        if self._sample is None:
            self._sample = self.op.sample(self.index, self.dtype, requires_grad=True)
        return self._sample

    @property
    def call(self):
        """The sample as ``call.func(*call.inputs)`` (a ``runner.samplecall.SampleCall``)."""
        return self.settings.registry.call(self.op, self.sample, self.settings.policy.engine)

    def run(self, checks=None) -> list:
        """Run the checks (default ``self.checks``) as ``adcheck ops`` does; returns
        ``[(CheckResult, Report or None)]``, one per check (or one "setup" error
        when the op cannot be run on the sample)."""
        import warnings

        from adcheck.runner.run import run_tasks
        from adcheck.runner.tasks import OpTask
        settings = self.settings
        if checks is not None:
            settings = replace(settings, checks=settings_for(_names(checks, "checks"),
                                                             settings.policy.seed,
                                                             settings.registry).checks)
        task = OpTask(0, self.op_name, self.dtype_name, settings, self.index)
        with checking():
            outcome = run_tasks([task], in_process=True, warn=warnings.warn)
        if outcome.status == "interrupted":
            raise KeyboardInterrupt
        return [pair for s in outcome.samples for pair in zip(s.results, s.reports)]

    def assert_passes(self, checks=None) -> list:
        """Run the checks and assert that none fails; returns the ``CheckResult``s.

        A failing or erroring check raises ``AssertionError`` with each
        failure's report (diagnosis, worst entry, both Jacobians) and seed.
        Otherwise a check declared a known failure on the OpInfo makes the
        test xfail with its reason, and a case whose every check was skipped
        skips with the reasons; a check that passes although declared a known
        failure (a stale declaration) warns. As ``adcheck ops`` exits 3 for an
        op with no check judged, the session fails (exit status 1, the reasons
        in its summary) when every case of an op in a marked test skipped,
        unless ``--adcheck-allow-empty`` is given.
        """
        __tracebackhide__ = True
        import warnings
        outcomes = self.run(checks)
        results = [result for result, _ in outcomes]
        from adcheck.runner.results import declared
        skipped = [r for r in results if r.status == "skipped"]
        self.verdict = (len(skipped) < len(results) or not results,
                        tuple(dict.fromkeys(f"{r.check}: {r.message}" for r in skipped)),
                        all(declared(r) for r in skipped))
        failing = [(r, report) for r, report in outcomes if r.failing]
        if failing:
            raise AssertionError("\n".join(_failure(r, report, self.settings)
                                            for r, report in failing))
        for r in results:
            if r.stale:   # not a failure, but the declaration it contradicts wants updating
                warnings.warn(f"{r.op} {r.dtype}[{r.sample}] {r.check}: {r.message}",
                              stacklevel=2)
        known = [r for r in results if r.status == "known-failure"]
        if known:
            pytest.xfail("; ".join(f"{r.check}: {r.message}" for r in known))
        if all(r.status == "skipped" for r in results):
            pytest.skip("; ".join(f"{r.check}: {r.message}" for r in results))
        return results

    def __repr__(self) -> str:
        return f"OpCase({self.id!r}, checks={','.join(self.checks)})"


def _failure(result, report, settings) -> str:
    from pytest_adcheck.assertion import failure_text
    from adcheck.runner.reproduction import reproducer
    head = f"{result.op} {result.dtype}[{result.sample}] {result.check}: {result.status}"
    from adcheck.runner.record import RunRecord
    code = reproducer(result, RunRecord.of(settings))
    rerun = "" if code is None else "  reproduce:\n" + "".join(
        f"    {line}\n" for line in code.splitlines())
    if result.status == "error":   # the user's frames, then the Python that reruns it
        trace = "".join(f"  {line}\n" for line in (result.traceback or "").splitlines())
        return f"{head}: {result.message}\n{trace}{rerun}"
    if report is None or report.passed:
        return f"{head}: {result.message}"
    return f"{head}\n{failure_text(report)}\n{rerun}"
