"""``--format table`` (the default): a summary for people, drawn with rich.

An op-by-check table (how many samples passed, failed, failed as declared,
were skipped or errored), then every failure on one line with its diagnosis,
the checks that passed although declared known failures (stale
declarations), the baseline comparison, the slowest ops and a totals line.
``-q`` keeps the failures, the number of stale declarations and the totals;
``-v`` adds skips and known failures with their reasons. User text goes
into ``rich.text.Text`` objects, never into markup, so brackets in op names
or messages print as they are.
"""
from __future__ import annotations

import re
from typing import TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from adcheck.cli.formats.advice import cli_terms
from adcheck.cli.formats.entries import entry_lines
from adcheck.runner.results import ALLOW_EMPTY, STATUSES, ExitCode, RunReport, declared

STYLE = {"passed": "green", "failed": "bold red", "known-failure": "yellow",
         "skipped": "dim", "error": "bold magenta"}
SHORT = {"passed": "ok", "failed": "fail", "known-failure": "known", "skipped": "skip",
         "error": "error"}


def _cell(counter) -> Text:
    text = Text()
    for status in STATUSES:
        if counter.get(status):
            if text:
                text.append(" ")
            text.append(f"{SHORT[status]} {counter[status]}", style=STYLE[status])
    return text or Text("-", style="dim")


def summary_table(report: RunReport) -> Table:
    """Rows: ops; columns: checks; cells: counts of samples by status."""
    checks = report.checks()
    families = {r.op: r.family for r in report.results}
    table = Table(title=Text(f"adcheck {report.command}: {_title(report)}"),
                  title_justify="left")
    table.add_column("op", style="bold")
    table.add_column("kind" if report.settings.get("kind") else "family", style="dim")
    for check in checks:
        table.add_column(check)
    for op, by_check in report.by_op_and_check().items():
        table.add_row(Text(op), Text(families.get(op, "")),
                      *(_cell(by_check.get(check, {})) for check in checks))
    return table


def _title(report: RunReport) -> str:
    s = report.settings
    tolerance = "precise" if s.get("precise") else "torch tolerances"
    registry = s.get("registry", "opinfo")
    where = "" if registry == "opinfo" else f"registry {registry}, "
    shard = report.shard or {}
    part = (f", shard {shard['index']}/{shard['count']}" if "index" in shard else
            f", {shard['merged']} shards merged" if "merged" in shard else "")
    return f"{where}engine {s.get('engine', '?')}, {tolerance}, seed {s.get('seed')}{part}"


def _stale_lines(report: RunReport, verbosity: int) -> list:
    """Each check that passed although declared a known failure (not with -q), then
    how many there are."""
    stale = report.stale()
    if not stale:
        return []
    lines = []
    if verbosity >= 0:
        for r in stale:
            sample = "*" if r.sample is None else str(r.sample)
            line = Text("STALE ", style="cyan")
            line.append(f"{r.op} {r.dtype}[{sample}] {r.check}", style="bold")
            lines.append(line.append(f": {r.message}"))
    plural = "check passes" if len(stale) == 1 else "checks pass"
    lines.append(Text(f"{len(stale)} {plural} although declared a known failure (the "
                      "declaration does not hold for these samples: stale, or too wide)",
                      style="cyan"))
    return lines


def _result_line(r) -> Text:
    sample = "*" if r.sample is None else str(r.sample)
    line = Text(f"{SHORT[r.status].upper():5} ", style=STYLE[r.status])
    line.append(f"{r.op} {r.dtype}[{sample}] {r.check}", style="bold")
    if r.message:
        line.append(f": {cli_terms(r.message)}")
    if r.diagnosis and r.diagnosis not in r.message:
        line.append(f" (diagnosis: {cli_terms(r.diagnosis)})", style="cyan")
    if r.status == "failed" and r.resolution is not None:
        line.append(f" [{r.dtype}: errors above {r.resolution:.1e} relative detectable]",
                    style="dim")
    if r.dispute:
        line.append(f"\n      {r.dispute}", style="cyan")
    return line


def probed_lines(report: RunReport) -> list:
    """Per op and check built from probed Jacobians: that it was, and the odds
    that one wrong entry escaped (the largest over its samples)."""
    worst: dict = {}
    passed: set = set()
    for r in report.results:
        if r.plan == "probed" and r.escape and r.check in r.escape:
            key = (r.op, r.check)
            worst[key] = max(worst.get(key, 0.0), r.escape[r.check])
            relative = r.escape.get("relative_error", 0.0)
            if r.status == "passed":
                passed.add(key)
    if not worst:
        return []
    odds = "; ".join(f"{op} {check} {p:.1e}" for (op, check), p in worst.items())
    why = (" chosen by --jacobian auto: every entry would not fit in half the time "
           "--timeout leaves, or too many columns for few rows"
           if report.settings.get("jacobian", "auto") == "auto" else "")
    weak = [f"{op} {check}" for (op, check), p in worst.items()
            if p >= WEAK_ODDS and (op, check) in passed]
    # (a harvest's whole-model check is probed whatever --jacobian says: its Functions
    # are what it judges entry by entry)
    fix = ("its Functions are judged one by one above" if report.settings.get("harvest")
           else "build every entry with --jacobian dense, or check the Functions inside one "
           "by one (--harvest)")
    said = (f"; {', '.join(weak)} passed saying little of single entries (a wrong one "
            f"escapes at odds of {WEAK_ODDS} or more: the tolerance is that large beside the "
            f"rows' norms): {fix}" if weak else "")
    return [Text(f"probed Jacobians (J U along random directions,{why}; --jacobian dense "
                 f"builds every entry): a single entry wrong by {relative:.0e} of its row's "
                 f"norm escapes with probability at most {odds}{said}", style="dim")]


#: the odds of escape at which a probed check's pass is said to say little
WEAK_ODDS = 0.5

#: the explore tally's words (``gradcheck.explore.tally.Tally.text``)
_TALLY = re.compile(r"explored (\d+) points.*?, (\d+) timed out")


def explore_gap_lines(report: RunReport) -> list:
    """One line for the passed checks whose explored points half or more timed
    out: the quick pass judged little there, which read as an ordinary pass."""
    gaps = []
    for r in report.results:
        found = _TALLY.search(r.message or "") if r.status == "passed" else None
        if found and int(found.group(1)) and 2 * int(found.group(2)) >= int(found.group(1)):
            gaps.append(f"{r.op} {r.check} ({found.group(2)} of {found.group(1)})")
    if not gaps:
        return []
    return [Text(f"explored points that timed out, judged nothing there: {', '.join(gaps)}; "
                 "give exploring more time (--explore SECONDS) on a less busy machine",
                 style="yellow")]


def partly_judged_lines(report: RunReport) -> list:
    """One line per op whose passed checks left input coordinates unjudged, or
    judged them by narrow differences only (their steps left the function's
    domain: ``gradcheck.verdict.offdomain``), which a passing row does not print."""
    from adcheck.gradcheck.verdict.offdomain import SAID
    said = {}
    for r in report.results:
        if r.status == "passed" and any(words in (r.message or "") for words in SAID):
            said.setdefault(r.op, r.message.split("; explored")[0])
    return [Text(f"{op}: {text}", style="yellow") for op, text in said.items()]


def unjudged_lines(report: RunReport) -> list:
    """One line per op or target whose every check was skipped, with the
    reasons, at every verbosity (a run in which nothing was judged is no pass);
    the ops that declare no derivative for the checks (``eq``) in one line."""
    unjudged = report.unjudged()
    by_declaration = [op for op in unjudged if all(
        declared(r) for r in report.results if r.op == op)]
    lines = []
    for op, reasons in unjudged.items():
        if op not in by_declaration:
            line = Text("NOT CHECKED ", style="bold yellow")
            line.append(op, style="bold")
            lines.append(line.append(f": every check was skipped ({'; '.join(reasons)})"))
    if by_declaration:
        lines.append(Text(f"not checked, declaring no derivative for these checks: "
                          f"{', '.join(by_declaration)}", style="yellow"))
    if report.empty():
        allowed = report.settings.get(ALLOW_EMPTY, False)
        what = "targets" if report.settings.get("kind") else "ops"
        lines.append(Text(
            f"{len(unjudged)} of {len(report.by_op_and_check())} checked {what} had nothing "
            "judged: " + ("accepted by --allow-empty" if allowed else
                          f"exit status {int(ExitCode.EMPTY)} (pass --allow-empty to accept)"),
            style="bold yellow"))
    return lines


def totals_line(report: RunReport) -> Text:
    counts = report.counts()
    line = Text()
    for status in STATUSES:
        if line:
            line.append(", ")
        label = status.replace("-", " ") + ("s" if status in ("known-failure", "error")
                                             and counts[status] != 1 else "")
        line.append(f"{counts[status]} {label}",
                    style=STYLE[status] if counts[status] else "")
    line.append(f" in {report.seconds:.1f}s")
    if report.error is not None:
        line.append("  (the run could not go on: partial report)", style="bold magenta")
    elif report.interrupted:
        by = "" if report.signal in (None, "SIGINT") else f" by {report.signal}"
        line.append(f"  (interrupted{by}: partial report)", style="bold yellow")
    elif report.stopped_early:
        line.append("  (stopped at the first failure: --fail-fast)", style="yellow")
    return line


def _precision_lines(report: RunReport) -> list:
    """Per low-precision dtype, what its checks were judged against and the
    relative errors they could detect (median and coarsest over the checks)."""
    stated: dict = {}
    for r in report.results:
        if r.precision and r.resolution is not None:
            against = r.precision.split(": ")[0].split(" (")[0]
            key = r.op if r.dtype == "-" else r.dtype   # (a harvest's whole model: no dtype)
            stated.setdefault(key, ([], set()))[0].append(r.resolution)
            stated[key][1].add(against.split(" formula against ")[-1])
    lines = []
    for dtype, (resolutions, against) in stated.items():
        lines.append(Text(f"{dtype}: formulas against {' or '.join(sorted(against))}; "
                          f"relative errors above {sorted(resolutions)[len(resolutions) // 2]:.1e}"
                          f" detectable (median over {len(resolutions)} checks; coarsest "
                          f"{max(resolutions):.1e})", style="dim"))
    return lines


def _passing_model_lines(report: RunReport) -> list:
    """A harvest whose whole model passes while Functions fail on their own, or
    were not judged: the model row's sentence saying so (an error its
    tolerance hides, or a second-order one it cannot show), which a passing
    row does not print."""
    if not report.settings.get("harvest"):
        return []
    from adcheck.gradcheck.harvest.api import model_worth_showing
    from adcheck.runner.harvest import MODEL_SAMPLE
    return [Text(f"{r.op}: {r.message}", style="cyan") for r in report.results
            if r.status == "passed" and r.sample_name == MODEL_SAMPLE and
            model_worth_showing(r.message)]


def _baseline_lines(report: RunReport) -> list:
    b = report.baseline
    if b is None:
        return []
    lines = [Text(f"baseline {b.path}: {len(b.new)} new, {len(b.accepted)} accepted, "
                  f"{len(b.fixed)} fixed", style="bold")]
    lines += [Text(f"  new    {key}", style="red") for key in b.new]
    lines += [Text(f"  fixed  {key} (remove it from the baseline)", style="green")
              for key in b.fixed]
    return lines


class TableFormat:
    """The human summary."""

    name = "table"

    def render(self, report: RunReport, out: TextIO, *, color: bool = False,
               verbosity: int = 0) -> None:
        console = Console(file=out, force_terminal=color, no_color=not color,
                          width=None if color else 120, highlight=False, soft_wrap=True)
        if verbosity >= 0 and report.results:
            console.print(summary_table(report))
        shown = {"failed", "error"} | ({"known-failure", "skipped"} if verbosity > 0 else set())
        accepted = set(report.baseline.accepted) if report.baseline is not None else set()
        for r in report.results:
            if r.status in shown:
                line = _result_line(r)
                if r.key in accepted:
                    line = Text("(accepted by the baseline) ", style="dim") + line
                console.print(line)
                if verbosity >= 0:
                    for part in entry_lines(r, report.settings.get("layouts"), verbosity):
                        console.print(part)
                if verbosity > 0 and r.status == "error" and r.traceback:
                    console.print(Text("".join(f"      {t}\n" for t in
                                               r.traceback.splitlines()).rstrip("\n"),
                                       style="magenta"))
        for line in unjudged_lines(report) + partly_judged_lines(report) + \
                _stale_lines(report, verbosity) \
                + _baseline_lines(report) + _passing_model_lines(report):
            console.print(line)
        if verbosity >= 0 and report.results:
            for line in _precision_lines(report) + probed_lines(report) + \
                    explore_gap_lines(report):
                console.print(line)
            slow = ", ".join(f"{op} {s:.2f}s" for op, s in report.slowest())
            # (each op's checks summed: on several workers they exceed the run's own time)
            console.print(Text(f"slowest (its checks' time, summed): {slow}", style="dim"))
        console.print(totals_line(report))
