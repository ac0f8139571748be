"""The one exception a command raises for a user mistake.

click's ``ClickException`` exits 1, which we keep for "a check failed";
``InputError`` prints one ``Error: ...`` line and exits 2 (ExitCode.USAGE).
The runner raises its own ``runner.errors.RunnerError`` for bad input; the
command group (``cli.main``) turns one that reaches it into an ``InputError``.
"""
from __future__ import annotations

import click

from adcheck.cli.exit_codes import ExitCode


class InputError(click.ClickException):
    """A bad op name, module path, spec or plugin: one line, exit status 2."""

    exit_code = ExitCode.USAGE

    def __init__(self, message: str):
        super().__init__(" ".join(message.split()))
