"""The commands' calls into the runner: load the registry, select, run the
tasks with a progress bar, and hold the outcome as a ``RunReport``.

The runner does the work (``runner``); this module turns the command line's
words into its calls (``build``: the run's ``Settings``, validated before any
worker starts), prints its warnings on stderr, and hands each report its
``RunRecord`` (``runner.record``).
"""
from __future__ import annotations

import os
import re
import sys
import time
from contextlib import nullcontext
from pathlib import Path

import click

from adcheck.cli.errors import InputError


def load_registry(plugins: tuple = (), registry=None):
    """``registry`` (default: adcheck's own) with the plugin files loaded; a
    plugin that does not load is a usage error."""
    from adcheck.runner.errors import PluginError
    from adcheck.runner.registry import OpinfoRegistry
    registry = OpinfoRegistry() if registry is None else registry
    try:
        registry.load_plugins(plugins)
    except PluginError as exc:
        raise InputError(f"{exc}; fix the file or leave out --plugin") from None
    return registry


def open_registry(name: str, plugins: tuple = (), **options):
    """The registry ``--registry`` names (``options`` go to its constructor),
    its plugin files not yet loaded (``load_registry`` does). Only adcheck's own
    registry takes plugin files."""
    from adcheck.runner.registry import named
    if name == "opinfo":
        return named("opinfo")
    if plugins:
        raise InputError(f"--plugin adds OpInfos to adcheck's own registry; --registry {name} "
                         "takes none: leave out --plugin")
    return named(name, **options)


def registry_defaults(registry, checks: str, engine: str) -> tuple:
    """``(checks, engine)``: a registry that has its own default checks or runs
    on one engine only replaces the command line's defaults (never a value the
    user gave: an engine it cannot run on is a usage error)."""
    from click.core import ParameterSource
    context = click.get_current_context()

    def given(name: str) -> bool:
        return context.get_parameter_source(name) not in (ParameterSource.DEFAULT, None)
    own_checks = registry.default_checks
    if own_checks and not given("checks"):
        checks = ",".join(own_checks)
    fixed = registry.engine
    if fixed is not None and engine != fixed:
        if given("engine"):
            raise InputError(f"--registry {registry.name} checks its ops on {fixed} only; "
                             f"leave out --engine {engine}")
        engine = fixed
    return checks, engine


def plugin_ops(registry, path) -> list:
    """The names of the ops a plugin file adds (loading it once per process)."""
    from adcheck.runner.errors import PluginError
    try:
        return registry.plugin_ops(path)
    except PluginError as exc:
        raise InputError(f"{exc}; fix the file or leave out --plugin") from None


def select(registry, patterns: tuple, families: tuple, engine: str) -> list:
    """The selected ops (``runner.selection.select``), warning about those
    ``--engine torch`` leaves out."""
    from adcheck.cli.reporting import warn
    from adcheck.runner.selection import select as runner_select
    chosen = runner_select(registry, patterns, families, engine)
    if chosen.without_torch:
        warn(f"{len(chosen.without_torch)} selected ops name no torch op and are not checked "
             f"on torch: {', '.join(chosen.without_torch)}")
    return chosen.infos


def build(checks: tuple, engine: str, precise: bool, seed: int, timeout: float | None,
          memory_budget: int, plugins: tuple = (), registry=None, keep_reports: bool = False,
          explore: bool | None = False, explore_budget: float | None = None,
          jacobian: str = "auto"):
    """The run's ``Settings`` from the options of ``ops``, ``op`` and ``check``
    (``--memory-budget`` in MiB, ``--explore`` and ``--explore-budget``; ``explore``
    ``None``, neither flag given: the quick pass), built
    and validated by ``runner.tasks.build_settings``; a bad value is a usage
    error (exit 2, one line) here, before any worker starts."""
    from adcheck.runner.errors import RunnerError
    from adcheck.runner.tasks import build_settings
    try:
        return build_settings(checks, engine=engine, precise=precise, seed=seed,
                              timeout=timeout, memory_budget=memory_budget * 2**20,
                              jacobian=jacobian,
                              explore="quick" if explore is None else (
                                  (explore_budget or 0.0) if explore else None),
                              plugins=plugins, registry=registry, keep_reports=keep_reports)
    except RunnerError as exc:
        raise InputError(str(exc)) from None


def recorded(settings, **about):
    """The ``RunRecord`` a report keeps of a run made with ``settings``."""
    from adcheck.runner.record import RunRecord
    return RunRecord.of(settings, **about)


def prestart(registry=None) -> None:
    """Start the workers' imports now, so that they run while this process
    imports and selects: the fork server, which imports the libraries (and a
    registry's ``preload``, PyTorch's op_db's; JAX for ``adcheck check`` of
    JAX code) once, without waiting for it (a worker started here would wait
    for it); where there is no fork server, a worker. None for ``adcheck
    check`` of torch code: its workers are forks of this process once it has
    imported the file (``forks_here``)."""
    from adcheck.runner.pool import JAX_PRELOAD, shared_pool
    preload = () if registry is None else registry.preload
    checked = _checked_code()
    if checked == "torch":
        return
    preload = [*preload, *(JAX_PRELOAD if checked == "jax" else ())]
    try:
        if preload:
            shared_pool().warm(preload)
        elif not shared_pool().start_server():
            shared_pool().prestart(1)
    except Exception:  # noqa: BLE001 - the run starts them again and says why it cannot
        pass


#: a line of Python source that imports torch; one that imports JAX or a library on it
_IMPORTS_TORCH = re.compile(r"^[ \t]*(?:import|from)[ \t]+torch\b", re.MULTILINE)
_IMPORTS_JAX = re.compile(r"^[ \t]*(?:import|from)[ \t]+(?:jax|flax|equinox)\b", re.MULTILINE)


def _source_file(module: str) -> Path | None:
    """The file of ``MODULE`` in ``MODULE:OBJECT``, found the way ``runner.target``
    imports it (a path, or a module under the current folder), without importing it."""
    if module.endswith(".py") or "/" in module:
        return Path(module)
    base = Path(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imports(target: str | None, pattern) -> bool:
    """Whether ``MODULE:OBJECT``'s file has a line ``pattern`` finds."""
    module, _, name = (target or "").rpartition(":")
    path = _source_file(module) if module and name.isidentifier() else None
    try:
        return path is not None and bool(pattern.search(path.read_text()))
    except (OSError, UnicodeDecodeError):
        return False


def uses_torch(target: str | None, engine: str | None = None) -> bool:
    """Whether ``MODULE:OBJECT`` is in a file that imports torch, or a plain
    function on ``engine`` torch: read from the file's text, nothing imported.
    A guess, never a decision: a wrong one costs time, not a result."""
    return engine == "torch" or _imports(target, _IMPORTS_TORCH)


def uses_jax(target: str | None, engine: str | None = None) -> bool:
    """``uses_torch`` for JAX: ``--engine jax``, one of JAX's own functions
    (``jax.nn:gelu``), or a file that imports JAX (or Flax, Equinox)."""
    return engine == "jax" or (target or "").split(".")[0].split(":")[0] == "jax" or \
        _imports(target, _IMPORTS_JAX)


def _checked_code() -> str | None:
    """"torch" or "jax" where the command running is ``adcheck check
    MODULE:OBJECT`` of that engine's code (a guess: ``uses_torch``), else None."""
    context = click.get_current_context(silent=True)
    if context is None or context.info_name != "check":
        return None
    params = context.params
    if params.get("plugin") is not None or params.get("against") is not None:
        return None
    target, engine = params.get("target"), params.get("engine")
    return "torch" if uses_torch(target, engine) else "jax" if uses_jax(target, engine) \
        else None


#: set by ``adcheck.cli.main.main``: this process is the ``adcheck`` command itself,
#: not a program that calls the command line in its own process (which may have run
#: torch backwards before: ``runner.pool.torch_backward_forks``)
AS_COMMAND: list = []


def forks_here(tasks: list) -> bool:
    """Whether the workers of ``tasks`` are best forks of this process
    (``runner.pool.WorkerPool.forking_here``): checks of a user's object, with
    torch imported here (with the user's file) and JAX not (its threads would
    not survive a fork), and the workers computing on one thread (the user did
    not ask torch for more with ``OMP_NUM_THREADS``), on Linux (macOS's system
    libraries are not safe to fork; Windows has no fork)."""
    from adcheck.runner.tasks import TargetTask
    return sys.platform.startswith("linux") and bool(tasks) and \
        all(isinstance(t, TargetTask) for t in tasks) and \
        "torch" in sys.modules and "jax" not in sys.modules and \
        os.environ.get("OMP_NUM_THREADS", "1").strip() == "1"


def run(command: str, tasks: list, jobs: int, fail_fast: bool, level: int,
        settings_record, planned: list | None = None):
    """Run the tasks in worker processes, with a progress bar on stderr;
    returns the ``RunReport`` (partial when a stop signal came) holding
    ``settings_record`` (a ``RunRecord``). ``planned``:
    the whole plan ``tasks`` are a shard of (which may then be empty)."""
    from adcheck.cli import signals
    from adcheck.cli.reporting import progress_bar, warn
    from adcheck.runner.results import RunReport
    from adcheck.runner.pool import shared_pool
    from adcheck.runner.run import run_tasks
    if not (tasks if planned is None else planned):
        raise InputError("nothing to check: no selected op supports the selected dtypes; "
                         "widen --dtype or the op patterns")
    start = time.perf_counter()
    try:
        forking = shared_pool().forking_here(min(jobs, len(tasks)), probe=not AS_COMMAND,
                                             freeze=bool(AS_COMMAND)) \
            if forks_here(tasks) else nullcontext()
        with forking, progress_bar(len(tasks), level >= 0 and sys.stderr.isatty()) as advance:
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
    from adcheck.runner.selection import plan
    tasks = plan(infos, dtypes, settings, together=True)
    record = recorded(settings, dtypes=dtypes, fail_fast=fail_fast, **extra)
    if shard is None:
        return run(command, tasks, jobs, fail_fast, level, record)
    from adcheck.runner.shard import record as shard_record
    from adcheck.runner.shard import shard_tasks
    mine = shard_tasks(tasks, *shard)
    report = run(command, mine, jobs, fail_fast, level, record, planned=tasks)
    report.shard = shard_record(tasks, mine, *shard)
    return report
