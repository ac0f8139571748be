"""The end of a run, shared by ``ops`` and ``check``: progress on stderr,
then the baseline comparison, the report on stdout, the JUnit file, the
HTML page, the written baseline, and the exit status."""
from __future__ import annotations

import sys
from contextlib import contextmanager

import click

from adcheck.cli.errors import InputError
from adcheck.runner.results import RunReport


def load_baseline(path: str | None, registry: str = "opinfo") -> set | None:
    """Read the baseline before the run, so a bad file costs no sweep (nor one of
    another registry: ``registry`` names this run's)."""
    if path is None:
        return None
    from adcheck.runner import baseline
    try:
        return baseline.load(path, registry)
    except baseline.BaselineError as exc:
        raise InputError(str(exc)) from None


def check_writable(*paths: str | None) -> None:
    """Refuse, before any work, an output file whose folder does not exist."""
    import os
    for path in paths:
        if path is None:
            continue
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            raise InputError(f"cannot write {path!r}: the folder {folder!r} does not exist or "
                             "is not writable; choose another path")


def warn(text: str) -> None:
    click.echo(f"warning: {text}", err=True)


@contextmanager
def progress_bar(total: int, enabled: bool):
    """A rich progress bar on stderr; yields ``advance(task, outcome)``."""
    if not enabled or total == 0:
        yield None
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )
    console = Console(file=sys.stderr)
    columns = (TextColumn("{task.description:<28}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("[red]{task.fields[failing]} failing"), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task_id = bar.add_task("checking", total=total, failing=0)
        failing = 0

        def advance(task, outcome):
            nonlocal failing
            failing += sum(r.failing for r in outcome.results)
            bar.update(task_id, advance=1, failing=failing,
                       description=escape(f"{task.op} {task.dtype}"[:28]))
        yield advance


def finish(report: RunReport, fmt: str, junit_xml: str | None, accepted: set | None,
           baseline_path: str | None, write_baseline: str | None, level: int,
           html: str | None = None, allow_empty: bool | None = None) -> None:
    """Compare with the baseline, write every output (``cli.output.publish``:
    whole files, the true status in each), and exit with that status.
    ``allow_empty`` (``--allow-empty``) is recorded in the settings, where the
    exit status reads it; ``None`` keeps what they hold (a merged report's)."""
    from adcheck.cli.output import publish, render
    from adcheck.runner import baseline
    if allow_empty is not None:
        from dataclasses import replace
        report.settings = replace(report.settings, allow_empty=allow_empty)
    if accepted is not None:
        report.baseline = baseline.compare(report.results, accepted, baseline_path)
    announce(report)
    files = []
    if junit_xml is not None:
        files.append((junit_xml, lambda r: render("junit", r), None))
    if html is not None:
        from adcheck.cli.formats.html import page
        files.append((html, page, None))
    if write_baseline is not None:
        if report.interrupted or report.error is not None:
            warn(f"the run did not finish: {write_baseline} not written")
        else:
            count = len(baseline.entries_from_results(report.results))
            files.append((write_baseline, baseline.text,
                          f"wrote {count} accepted failure{'' if count == 1 else 's'} to "
                          f"{write_baseline}"))
    color = sys.stdout.isatty()
    status = publish(report, lambda r: render(fmt, r, color=color, verbosity=level), files)
    if report.interrupted:
        by = "" if report.signal in (None, "SIGINT") else f" by {report.signal}"
        click.echo(f"interrupted{by}: the report above is partial", err=True)
    raise click.exceptions.Exit(status)


def announce(report: RunReport) -> None:
    """Say on stderr, in one line, why the run could not go on, if it could not."""
    if report.error is not None:
        click.echo(f"Error: {report.error}", err=True)
