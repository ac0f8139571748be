"""``adcheck ops``: sweep the operator registry."""
from __future__ import annotations

import os

import fnmatch
import time

import click

from cli.errors import InputError
from cli.options import (
    check_options,
    html_option,
    parse_checks,
    parse_dtypes,
    report_options,
    require_engine,
    verbosity,
)

#: resolved plugin path -> names of the OpInfos it registered (a file loads once)
_PLUGIN_OPS: dict = {}


def load_registry(plugins: tuple = ()):
    """``opinfo`` with the plugin files loaded; a bad plugin is an InputError."""
    import opinfo
    for path in plugins:
        plugin_ops(opinfo, path)
    return opinfo


def plugin_ops(opinfo, path) -> list:
    """Load one plugin file (once per process); the names of its OpInfos."""
    from pathlib import Path

    key = str(Path(path).resolve())
    if key not in _PLUGIN_OPS:
        try:
            _PLUGIN_OPS[key] = opinfo.load_plugin(path)
        except ValueError as exc:
            raise InputError(f"{exc}; fix the file or leave out --plugin") from None
    return _PLUGIN_OPS[key]


def select(opinfo, patterns: tuple, families: tuple, engine: str) -> list:
    """The OpInfos matching the name patterns (globs) and families."""
    infos = list(opinfo.op_db)
    known_families = opinfo.families()
    for family in families:
        if family not in known_families:
            raise InputError(f"unknown family {family!r}; known families: "
                             f"{', '.join(known_families)}")
    if families:
        infos = [i for i in infos if i.family in families]
    if patterns:
        for pattern in patterns:
            if not any(fnmatch.fnmatchcase(i.name, pattern) for i in opinfo.op_db):
                _unknown_op(opinfo, pattern)
        infos = [i for i in infos if any(fnmatch.fnmatchcase(i.name, p) for p in patterns)]
    if engine == "torch":
        without = [i.name for i in infos if i.torch_name is None]
        if without:
            from cli.reporting import warn
            warn(f"{len(without)} selected ops name no torch op and are not checked on "
                 f"torch: {', '.join(without)}")
        infos = [i for i in infos if i.torch_name is not None]
    return infos


def _unknown_op(opinfo, pattern: str):
    try:
        opinfo.get(pattern)
    except KeyError as exc:
        hint = exc.args[0]
    else:  # pragma: no cover - get() found what fnmatch did not
        hint = f"no op matches {pattern!r}"
    raise InputError(f"{hint.rstrip('?')}; run 'adcheck list' to see the registry")


def run_sweep(infos, dtypes, settings, jobs, fail_fast, level, command="ops",
              extra_settings=None):
    """Plan and run the tasks of ``infos``; returns the ``RunReport``."""
    import sys

    from cli.reporting import progress_bar, warn
    from cli.results import RunReport
    from cli.sweep import plan, run_task, sweep
    tasks = plan(infos, dtypes, settings)
    if not tasks:
        raise InputError("nothing to check: no selected op supports the selected dtypes; "
                         "widen --dtype or the op patterns")
    start = time.perf_counter()
    with progress_bar(len(tasks), level >= 0 and sys.stderr.isatty()) as advance:
        results, status = sweep(tasks, run_task, jobs, fail_fast, advance, warn,
                                settings.plugins)
    policy = settings.policy
    recorded = {"engine": policy.engine, "precise": policy.precise,
                "checks": list(settings.checks), "dtypes": dtypes, "seed": policy.seed,
                "plugins": list(settings.plugins),
                "timeout": settings.timeout, "fail_fast": fail_fast, **(extra_settings or {})}
    return RunReport(command, recorded, results, interrupted=status == "interrupted",
                     stopped_early=status == "stopped", seconds=time.perf_counter() - start)


@click.command("ops")
@click.argument("patterns", nargs=-1, metavar="[PATTERN]...")
@click.option("--family", "families", multiple=True, metavar="NAME",
              help="Only ops of this family (repeatable); see 'adcheck list'.")
@click.option("--dtype", "dtypes", multiple=True, metavar="LIST",
              help="Dtypes to check, comma-separated or repeated (float32, float64, "
                   "complex64, complex128). Default: float64 and complex128.")
@check_options("reverse,forward,gradgrad,reference")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=lambda: os.cpu_count() or 1,
              show_default="the number of CPUs",
              help="Worker processes; the results are the same for any number.")
@click.option("--plugin", "plugins", multiple=True, type=click.Path(dir_okay=False),
              metavar="FILE", help="Also load the OpInfos defined in this Python file.")
@report_options
@html_option
def ops(patterns, families, dtypes, checks, engine, precise, seed, timeout, jobs, plugins,
        fmt, junit_xml, baseline, write_baseline, fail_fast, verbose, quiet, html):
    """Sweep the operator registry and check every op's derivatives.

    PATTERN selects ops by name, with shell wildcards ('log*'); none means
    all. Exit status: 0 all passed (or every failure is in --baseline), 1 a
    check failed or errored, 2 a usage or input error, 130 interrupted.
    """
    from cli.checkrun import Policy
    from cli.reporting import check_writable, finish, load_baseline
    from cli.sweep import Settings
    level = verbosity(verbose, quiet)
    check_writable(junit_xml, write_baseline, html)
    chosen_checks, chosen_dtypes = parse_checks(checks), parse_dtypes(dtypes)
    require_engine(engine)
    accepted = load_baseline(baseline)
    opinfo = load_registry(plugins)
    infos = select(opinfo, patterns, families, engine)
    if engine == "torch" and not infos:
        raise InputError("no selected op names a torch op (torch_name), so --engine torch "
                         "has nothing to check")
    settings = Settings(chosen_checks, Policy(precise, engine, seed), timeout,
                        tuple(str(p) for p in plugins))
    report = run_sweep(infos, chosen_dtypes, settings, jobs, fail_fast, level,
                       extra_settings={"patterns": list(patterns),
                                       "family": list(families) or None, "target": None})
    try:
        finish(report, fmt, junit_xml, accepted, baseline, write_baseline, level)
    finally:    # finish() always exits; the page follows, with the baseline comparison
        if html is not None:
            from cli.formats.html import write_report
            write_report(html, report)
