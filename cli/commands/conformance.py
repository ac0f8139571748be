"""``adcheck conformance``: run the documented-semantics suites on an engine."""
from __future__ import annotations

import json
import sys
import warnings
from collections import Counter

import click

from adcheck.cli import signals
from adcheck.cli.errors import InputError
from adcheck.cli.exit_codes import ExitCode
from adcheck.cli.output import console_text, emit
from adcheck.cli.options import ENGINES, require_engine, verbosity

STATUSES = ("passed", "failed", "error", "not-applicable")
STYLE = {"passed": "green", "failed": "bold red", "error": "bold magenta",
         "not-applicable": "dim"}


def _document(engine: str, results: list) -> dict:
    return {"schema": "adcheck-conformance", "schema_version": 1, "engine": engine,
            "summary": {s: sum(r.status == s for r in results) for s in STATUSES},
            "results": [{"id": r.id, "area": r.case.area, "case": r.case.name,
                         "status": r.status, "message": r.message,
                         "seconds": round(r.seconds, 4), "cite": r.case.cite,
                         "source": r.case.source} for r in results]}


def _table(engine: str, results: list, console, level: int) -> None:
    from rich.table import Table
    from rich.text import Text
    by_area: dict = {}
    for r in results:
        by_area.setdefault(r.case.area, Counter())[r.status] += 1
    table = Table(title=f"conformance on {engine}", title_justify="left")
    table.add_column("area", style="bold")
    for status in STATUSES:
        table.add_column(status, justify="right")
    for area, counts in by_area.items():
        table.add_row(Text(area), *(Text(str(counts[s]), style=STYLE[s] if counts[s] else "dim")
                                   for s in STATUSES))
    if level >= 0:
        console.print(table)
    shown = {"failed", "error"} | ({"not-applicable"} if level > 0 else set())
    for r in results:
        if r.status in shown:
            line = Text(f"{r.status.upper():7} ", style=STYLE[r.status])
            line.append(r.id, style="bold")
            line.append(f": {r.message}")
            console.print(line)
    totals = Counter(r.status for r in results)
    console.print(Text(", ".join(f"{totals[s]} {s}" for s in STATUSES)))


@click.command("conformance")
@click.option("--engine", type=click.Choice(ENGINES), default="refengine", show_default=True,
              help="Run the cases on refengine, or on torch to confirm the expectations.")
@click.option("--area", "areas", multiple=True, metavar="NAME",
              help="Only this area (repeatable); default all. --list-areas shows them.")
@click.option("--list-areas", is_flag=True, help="Print the area names and exit.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table",
              show_default=True,
              help="A table by area for people, or JSON (schema adcheck-conformance v1).")
@click.option("-v", "--verbose", is_flag=True, help="Also list not-applicable cases.")
@click.option("-q", "--quiet", is_flag=True, help="Only failures and totals.")
def conformance(engine, areas, list_areas, fmt, verbose, quiet):
    """Run the conformance suites: the documented autograd semantics as
    cases.

    Exit status: 0 every applicable case passed; 1 a case failed or errored;
    2 a usage error; 129, 130, 143 stopped by SIGHUP, SIGINT (Ctrl-C),
    SIGTERM."""
    import adcheck.conformance as suites
    level = verbosity(verbose, quiet)
    if list_areas:
        click.echo("\n".join(suites.areas()))
        return
    require_engine(engine)
    try:
        cases = suites.load_cases(list(areas) or None)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    results = []
    try:
        for case in cases:
            with warnings.catch_warnings():  # a case may provoke a warning on purpose
                warnings.simplefilter("ignore")
                results.append(suites.run_case(case, engine))
    except KeyboardInterrupt:
        signals.defer()
        click.echo("interrupted: the report below is partial", err=True)
        interrupted = True
    else:
        interrupted = False
    if fmt == "json":
        document = _document(engine, results)
        document["interrupted"] = interrupted
        emit(json.dumps(document, indent=2) + "\n")
    else:
        emit(console_text(lambda console: _table(engine, results, console, level),
                          sys.stdout.isatty()))
    failing = any(r.status in ("failed", "error") for r in results)
    code = signals.exit_status(signals.first()) if interrupted else \
        ExitCode.FAILED if failing else ExitCode.OK
    raise click.exceptions.Exit(int(code))
