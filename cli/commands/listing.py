"""``adcheck list``: the registry and what each op supports."""
from __future__ import annotations

import json
import sys

import click

from adcheck.cli.options import registry_option, verbosity
from adcheck.cli.output import console_text, emit

SHORT_DTYPE = {"float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
               "complex32": "c32", "complex64": "c64", "complex128": "c128"}


def _table(rows: list, verbose: bool, registry: str):
    from rich.table import Table
    from rich.text import Text

    from adcheck.gradcheck.core.modes import CAPABILITIES as MODES
    from adcheck.gradcheck.core.modes import CHECKS
    headers = {mode: CHECKS[mode].short for mode in MODES}
    # another registry's ops are torch's own, named as torch names them, and have no
    # mpmath references: those columns would say nothing
    own = registry == "opinfo"
    where = "" if own else f" of the registry {registry}"
    table = Table(title=f"{len(rows)} ops{where}", title_justify="left",
                  caption=", ".join(f"{headers[m]}: {m}" for m in MODES) + " (supported modes)"
                  + ("; mpmath: has an mpmath reference" if own else ""),
                  caption_justify="left")
    columns = ("op", "family", "torch", "dtypes", *(headers[m] for m in MODES), "mpmath",
               "known failures")
    for column in columns if own else [c for c in columns if c not in ("torch", "mpmath")]:
        table.add_column(column, no_wrap=column != "known failures")
    mark = {True: Text("yes", style="green"), False: Text("-", style="dim")}
    for row in rows:
        known = row["known_failures"]
        known_text = ("; ".join(f"{k['check']}: {k['reason']}" for k in known) if verbose
                      else str(len(known)) if known else "")
        cells = [Text(row["name"], style="bold"), Text(row["family"]),
                 Text(row["torch_name"] or "-"),
                 Text(" ".join(SHORT_DTYPE.get(d, d) for d in row["dtypes"])),
                 *(mark[row["modes"][m]] for m in MODES), mark[row["mpmath_ref"]],
                 Text(known_text, style="yellow")]
        table.add_row(*(cells if own else cells[:2] + cells[3:-2] + cells[-1:]))
    return table


@click.command("list")
@click.option("--family", "families", multiple=True, metavar="NAME",
              help="Only ops of this family (repeatable).")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table",
              show_default=True, help="A table for people, or JSON (schema adcheck-list v1).")
@click.option("--plugin", "plugins", multiple=True, type=click.Path(dir_okay=False),
              metavar="FILE", help="Also load the OpInfos defined in this Python file.")
@click.option("-v", "--verbose", is_flag=True, help="Show the reasons of known failures.")
@registry_option
def list_ops(families, fmt, plugins, verbose, registry_name):
    """List the registry: each op's family, torch name, dtypes, the modes it
    supports, whether it has an mpmath reference, and its known failures.

    Exit status: 0 listed; 2 a usage or input error (a plugin that cannot be
    loaded, op_db without PyTorch); 129, 130, 143 stopped by SIGHUP, SIGINT
    (Ctrl-C), SIGTERM."""
    from adcheck.cli.runs import load_registry, open_registry, select
    from adcheck.runner.registry import describe
    level = verbosity(verbose, False)
    registry = load_registry(plugins, open_registry(registry_name, plugins))
    rows = [describe(info) for info in select(registry, (), families, "refengine")]
    if fmt == "json":
        emit(json.dumps({"schema": "adcheck-list", "schema_version": 1,
                         "registry": registry.name, "ops": rows}, indent=2) + "\n")
    else:
        table = _table(rows, level > 0, registry.name)
        emit(console_text(lambda console: console.print(table), sys.stdout.isatty(), 140,
                          soft_wrap=False))
