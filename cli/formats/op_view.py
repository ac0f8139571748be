"""``adcheck op``'s two views of one operator: the detailed table and JSON.

Both read a ``RunReport`` whose ``subject`` describes the op and whose
``samples`` hold the sample outcomes with gradcheck's reports.

- ``op-table``: the op's header (family, torch name, dtypes, mpmath
  reference, known failures), a table of samples by check, then for each
  failed check both Jacobians side by side, the diagnosis and a reproducer
  (``cli.formats.detail``), and the errors and known failures in one line
  each (``-v``: also the skips).
- ``op-json``: schema ``adcheck-op`` v1: ``{"schema": "adcheck-op",
  "schema_version": 1, "op": <the op as adcheck list describes it>,
  "results": [<a result of the adcheck-report schema, plus "report": the
  full gradcheck report (Report.to_dict(), Jacobians included) or null>],
  "interrupted": bool, "signal": str | null, "error": str | null,
  "exit_code": int}`` (the last four as in ``adcheck-report``).
"""
from __future__ import annotations

import json
from typing import TextIO

from adcheck.runner.results import TASK_CHECK, RunReport


def _console(out: TextIO, color: bool):
    from rich.console import Console
    return Console(file=out, force_terminal=color, no_color=not color,
                   width=None if color else 120, highlight=False)


def _header(console, op: dict, registry: str) -> None:
    from rich.text import Text
    where = "" if registry == "opinfo" else f"registry {registry}, "
    console.print(Text(op["name"], style="bold"), Text(
        f"{where}family {op['family']}, torch {op['torch_name'] or '-'}, dtypes "
        f"{' '.join(op['dtypes'])}, mpmath reference {'yes' if op['mpmath_ref'] else 'no'}"))
    for checks, samples, reason in known_failure_notes(op["known_failures"]):
        where = f"; samples {', '.join(samples)}" if samples else ""
        console.print(Text(f"known failure ({', '.join(checks)}{where}): {reason}",
                           style="yellow"))


def known_failure_notes(declared: list) -> list:
    """``(checks, samples, reason)`` per distinct reason of an op's known-failure
    declarations, in order: declarations that differ only in check or dtype (one
    per dtype, as op_db makes them) give one note, not one each."""
    notes: dict = {}
    for kf in declared:
        checks, samples = notes.setdefault(kf["reason"], ([], []))
        checks += [c for c in [kf["check"]] if c not in checks]
        samples += [s for s in kf.get("samples") or () if s not in samples]
    return [(checks, samples, reason) for reason, (checks, samples) in notes.items()]


def _checks_table(report: RunReport):
    from rich.table import Table
    from rich.text import Text

    from adcheck.cli.formats.table import SHORT, STYLE
    checks = report.settings.get("checks") or []
    table = Table(title="samples and checks", title_justify="left")
    for column in ("dtype", "#", "sample", "tensors", *checks):
        table.add_column(column)
    for outcome in report.samples:
        found = {r.check: r for r in outcome.results}
        cells = [Text(SHORT[found[c].status], style=STYLE[found[c].status]) if c in found
                 else Text("-", style="dim") for c in checks]
        desc = outcome.description
        if TASK_CHECK in found:
            desc += f"  error: {found[TASK_CHECK].message}"
        table.add_row(outcome.dtype, "*" if outcome.sample is None else str(outcome.sample),
                      Text(outcome.name), Text(desc), *cells)
    return table


def _pairs(report: RunReport):
    """``(result, gradcheck Report or None)`` for every result, in order."""
    for outcome in report.samples:
        reports = outcome.reports or [None] * len(outcome.results)
        yield from zip(outcome.results, reports)


class OpTableFormat:
    """The detailed view of one op, for a terminal."""

    name = "op-table"

    def render(self, report: RunReport, out: TextIO, *, color: bool = False,
               verbosity: int = 0) -> None:
        from rich.text import Text

        from adcheck.cli.formats.advice import cli_terms
        from adcheck.cli.formats.detail import failure_panel
        from adcheck.cli.formats.table import SHORT, STYLE
        console = _console(out, color)
        _header(console, report.subject, report.settings.get("registry", "opinfo"))
        console.print(_checks_table(report))
        settings = report.settings
        for result, gc_report in _pairs(report):
            if result.status == "failed" and gc_report is not None:
                console.print(failure_panel(result, gc_report, settings,
                                            limit=99 if verbosity > 0 else 2))
            elif result.status in ("error", "known-failure") or (
                    verbosity > 0 and result.status == "skipped"):
                sample = "*" if result.sample is None else result.sample
                console.print(Text(f"{SHORT[result.status].upper()} {result.dtype}[{sample}] "
                                   f"{result.check}: {cli_terms(result.message)}",
                                   style=STYLE[result.status]))
        from adcheck.cli.formats.table import unjudged_lines
        for line in unjudged_lines(report):
            console.print(line)


class OpJsonFormat:
    """One op's results with the full gradcheck reports, as JSON."""

    name = "op-json"

    def render(self, report: RunReport, out: TextIO, *, color: bool = False,
               verbosity: int = 0) -> None:
        from adcheck.cli.formats.json_format import _finite
        results = []
        for result, gc_report in _pairs(report):
            entry = result.to_dict()
            entry["report"] = None if gc_report is None else gc_report.to_dict()
            results.append(entry)
        document = {"schema": "adcheck-op", "schema_version": 1, "op": report.subject,
                    "results": results, "interrupted": report.interrupted,
                    "signal": (report.signal or "SIGINT") if report.interrupted else None,
                    "error": report.error, "exit_code": int(report.exit_code())}
        json.dump(_finite(document), out, indent=2, allow_nan=False)
        out.write("\n")
