"""Entry point of the ``adcheck`` command.

Commands live one per module and are imported lazily, so ``adcheck --help``
stays fast: no NumPy, no torch at start-up.
"""
from __future__ import annotations

import click

from .exit_codes import ExitCode

@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version=None, package_name="adcheck", prog_name="adcheck",
                      message="%(prog)s %(version)s")
def cli() -> None:
    """adcheck: verify derivative formulas.

    Checks reverse-mode and forward-mode derivatives against finite
    differences and arbitrary-precision references, on refengine (the
    reference autograd engine shipped with adcheck) or on PyTorch.
    """


def main() -> None:
    try:
        cli.main(standalone_mode=True)
    except KeyboardInterrupt:
        raise SystemExit(ExitCode.INTERRUPTED)
