"""Entry point of the ``adcheck`` command.

Commands live one per module in ``cli/commands/`` and are imported only when
invoked (or listed by ``--help``, which imports the light command modules
but nothing heavy): no NumPy, no torch at start-up.
"""
from __future__ import annotations

import importlib

import click

from . import signals
from .exit_codes import ExitCode

#: command name -> "module:attribute"
COMMANDS = {
    "ops": "adcheck.cli.commands.ops:ops",
    "op": "adcheck.cli.commands.op:op",
    "check": "adcheck.cli.commands.check:check",
    "conformance": "adcheck.cli.commands.conformance:conformance",
    "list": "adcheck.cli.commands.listing:list_ops",
    "baseline": "adcheck.cli.commands.baseline:baseline",
    "merge": "adcheck.cli.commands.merge:merge",
}


#: adcheck's own packages: failing to import one means a broken installation
PACKAGES = ("adcheck",)


class LazyGroup(click.Group):
    """A group whose commands are imported on first use. Ctrl-C, SIGTERM and
    SIGHUP stop a command (``cli.signals``): exit 130, 143, 129. The runner's
    refusals (``runner.errors.RunnerError``) are usage errors (exit 2)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, attribute = COMMANDS[name].split(":")
        return getattr(importlib.import_module(module), attribute)

    def invoke(self, ctx: click.Context):
        with signals.handled():
            return self._invoke(ctx)

    def _invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            name = signals.first()
            click.echo("interrupted" if name in (None, "SIGINT") else f"stopped by {name}",
                       err=True)
            raise click.exceptions.Exit(signals.exit_status(name)) from None
        except ValueError as exc:
            from adcheck.runner.errors import RunnerError
            if not isinstance(exc, RunnerError):
                raise
            from .errors import InputError
            raise InputError(str(exc)) from None
        except ModuleNotFoundError as exc:
            if (exc.name or "").split(".")[0] not in PACKAGES:
                raise
            from .errors import InputError
            raise InputError(f"adcheck's package {exc.name!r} cannot be imported ({exc}); "
                             "the installation is incomplete: reinstall adcheck with "
                             "'python -m pip install .' (or -e . in a checkout)") from None


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version=None, package_name="adcheck", prog_name="adcheck",
                      message="%(prog)s %(version)s")
def cli() -> None:
    """adcheck: verify derivative formulas.

    Checks reverse-mode and forward-mode derivatives against finite
    differences and arbitrary-precision references, on refengine (the
    reference autograd engine shipped with adcheck) or on PyTorch.

    Exit status: 0 all checks passed, 1 a check failed, 2 a usage or input
    error (or an output that cannot be written), 3 nothing failed but some op
    or target had every check skipped (nothing judged; --allow-empty makes it
    0), 130 interrupted, 143 terminated (SIGTERM), 129 hung up (SIGHUP); when
    stopped, the partial report is written. Each command's --help says which
    of these it uses.
    """


def main() -> None:
    from adcheck.cli.runs import AS_COMMAND
    AS_COMMAND.append(True)
    try:
        cli.main(standalone_mode=True)
    except KeyboardInterrupt:
        raise SystemExit(ExitCode.INTERRUPTED)
