"""``adcheck baseline``: write a baseline of accepted failures from a saved run."""
from __future__ import annotations

import json

import click

from adcheck.cli.errors import InputError


@click.command("baseline")
@click.argument("report", type=click.Path(dir_okay=False, allow_dash=True),
                metavar="REPORT.json")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True,
                                                 allow_dash=True),
              default="-", show_default=True, metavar="FILE",
              help="Where to write the baseline ('-' for stdout).")
def baseline(report, output):
    """Turn a saved JSON report ('adcheck ops --format json > run.json') into
    a baseline for --baseline: its failures and errors become the accepted
    set. 'adcheck ops --write-baseline FILE' does the same in one step.

    Exit status: 0 written; 2 a report that cannot be read or is not an
    adcheck JSON report, or an output that cannot be written; 129, 130, 143
    stopped by SIGHUP, SIGINT (Ctrl-C), SIGTERM."""
    from adcheck.cli.output import emit
    from adcheck.runner import baseline as baselines
    from adcheck.runner.files import write_atomic
    try:
        with click.open_file(report, "r", encoding="utf-8") as handle:
            data = json.load(handle)
    except OSError as exc:
        raise InputError(f"cannot read {report!r}: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{report!r} is not JSON ({exc}); save a report with "
                         "'adcheck ops --format json > run.json'") from None
    try:
        entries = baselines.from_json_report(data)
    except baselines.BaselineError as exc:
        raise InputError(f"{report!r}: {exc}") from None
    registry = baselines.registry_of(data.get("settings"))
    text = json.dumps(baselines.document(entries, registry), indent=2) + "\n"
    if output == "-":
        emit(text)
        return
    try:
        write_atomic(output, text)
    except OSError as exc:
        raise InputError(f"cannot write {output!r}: {exc.strerror}") from None
    plural = "" if len(entries) == 1 else "s"
    click.echo(f"wrote {len(entries)} accepted failure{plural} to {output}", err=True)
