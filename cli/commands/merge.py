"""``adcheck merge``: the shards of a sweep as one report, one exit status."""
from __future__ import annotations

import json

import click

from adcheck.cli.errors import InputError


def _read(path: str) -> dict:
    try:
        with click.open_file(path, "r", encoding="utf-8") as handle:
            return json.load(handle)
    except OSError as exc:
        raise InputError(f"cannot read {path!r}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path!r} is not JSON ({exc}); save each shard with 'adcheck ops "
                         "--shard K/N --format json > shard-K.json'") from None


@click.command("merge")
@click.argument("reports", nargs=-1, required=True,
                type=click.Path(dir_okay=False, allow_dash=True), metavar="REPORT.json...")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table",
              show_default=True, help="The merged report on stdout: a table, or JSON (schema "
                                      "adcheck-report v1, as 'adcheck ops' writes it).")
@click.option("--junit-xml", type=click.Path(dir_okay=False, writable=True), metavar="PATH",
              help="Also write the merged run as JUnit XML.")
@click.option("--html", type=click.Path(dir_okay=False, writable=True), metavar="PATH",
              help="Also write the merged run as one HTML page (the Jacobians' heatmaps "
                   "are in each shard's own --html; this page has every failure, its "
                   "diagnosis and what reproduces it).")
@click.option("--baseline", type=click.Path(dir_okay=False), metavar="FILE",
              help="Accepted failures: exit 1 only for failures not in FILE (instead of "
                   "the baseline the shards ran with, if any).")
@click.option("--write-baseline", type=click.Path(dir_okay=False, writable=True),
              metavar="FILE", help="Write the merged run's failures to FILE as a baseline.")
@click.option("-v", "--verbose", is_flag=True,
              help="Also list skipped checks and known failures, with reasons.")
@click.option("-q", "--quiet", is_flag=True, help="No summary table: failures and totals.")
def merge(reports, fmt, junit_xml, html, baseline, write_baseline, verbose, quiet):
    """Join the JSON reports of the shards of one sweep ('adcheck ops --shard
    K/N --format json', K = 1..N) into the report of the whole sweep: its
    results in the order of an unsharded run, every output format, and the
    exit status the unsharded run would have had.

    Exit status: 0 every op or target had its checks judged and none failed;
    1 a check failed or errored; 2 shards of different selections or
    settings, a missing or repeated shard, or another usage error; 3 nothing
    failed but some op or target had every check skipped (unless the shards
    ran with --allow-empty); 129, 130, 143 a shard, or this command, was
    stopped by SIGHUP, SIGINT (Ctrl-C), SIGTERM."""
    from adcheck.cli.options import verbosity
    from adcheck.cli.reporting import check_writable, finish, load_baseline
    from adcheck.runner.merge import merge as merge_reports
    level = verbosity(verbose, quiet)
    check_writable(junit_xml, write_baseline, html)
    accepted = load_baseline(baseline)
    report = merge_reports([(path, _read(path)) for path in reports])
    finish(report, fmt, junit_xml, accepted, baseline, write_baseline, level, html)
