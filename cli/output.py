"""Writing a run's outputs: standard output and files, whole, with the true status.

``publish(report, stdout_text, files)`` writes every output of a run:

1. each file (JUnit, HTML, baseline) is rendered and staged beside its
   target (``runner.files``);
2. the report goes to standard output;
3. if a step failed, the status is now 2 and the staged files that record a
   status are rendered again; then each file replaces its target in one step.

A failure to write anything (a folder that went away, a full disk, a closed
pipe on stdout) is one ``Error: ...`` line on stderr and makes the exit
status 2, and every report written records that status. Stop signals wait
while this runs (``cli.signals.defer``), so no file is cut in half.
"""
from __future__ import annotations

import io
import os
import sys

import click

from adcheck.cli import signals
from adcheck.runner.files import stage


def _fail(report, message: str) -> None:
    click.echo(f"Error: {' '.join(message.split())}", err=True)
    report.output_error = report.output_error or message


def write_stdout(text: str) -> None:
    """Write and flush ``text`` to standard output; ``OSError`` when it cannot be
    (then standard output is pointed at the null device, so that Python's own
    flush at exit fails no more)."""
    out = sys.stdout
    try:
        out.write(text)
        out.flush()
    except OSError:
        if out is sys.__stdout__:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, out.fileno())
            os.close(null)
        raise


def emit(text: str) -> None:
    """Write ``text`` to standard output; a failure is a usage error (one line, exit 2)."""
    from adcheck.cli.errors import InputError
    try:
        write_stdout(text)
    except OSError as exc:
        raise InputError(f"cannot write to standard output: {exc.strerror or exc}") from None


def console_text(draw, color: bool, width: int = 120, soft_wrap: bool = True) -> str:
    """What ``draw(console)`` prints on a rich console, as text (with colour codes
    when ``color``, for a terminal)."""
    from rich.console import Console
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=color, no_color=not color,
                      width=None if color else width, highlight=False, soft_wrap=soft_wrap)
    draw(console)
    return buffer.getvalue()


def render(fmt: str, report, *, color: bool = False, verbosity: int = 0) -> str:
    """The text of ``report`` in format ``fmt`` (see ``cli.formats``)."""
    from adcheck.cli.formats import get_format
    buffer = io.StringIO()
    get_format(fmt).render(report, buffer, color=color, verbosity=verbosity)
    return buffer.getvalue()


def publish(report, stdout_text, files: list) -> int:
    """Write the outputs; returns the exit status every one of them records.

    ``stdout_text(report)`` gives the text for standard output (or None: no
    stdout); ``files`` is ``[(path, text(report), done)]`` where ``done`` is a
    line for stderr once the file is written, or ``None``.
    """
    signals.defer()
    staged = []
    for path, text, done in files:
        try:
            staged.append((stage(path, text(report)), text, done))
        except OSError as exc:
            _fail(report, f"cannot write {path!r}: {exc.strerror or exc}; choose a writable path")
    recorded = report.exit_code()
    if stdout_text is not None:
        try:
            write_stdout(stdout_text(report))
        except OSError as exc:
            _fail(report, "cannot write the report to standard output: "
                          f"{exc.strerror or exc}")
    for file, text, done in staged:
        try:
            if report.exit_code() != recorded:
                file.rewrite(text(report))
            file.commit()
        except OSError as exc:
            file.discard()
            _fail(report, f"cannot write {file.path!r}: {exc.strerror or exc}; choose a "
                          "writable path")
            continue
        if done is not None:
            click.echo(done, err=True)
    return int(report.exit_code())
