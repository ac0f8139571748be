"""``adcheck op NAME``: one operator in detail."""
from __future__ import annotations

import json
import sys
import time

import click

from cli.errors import InputError
from cli.exit_codes import ExitCode
from cli.options import (
    check_options,
    html_option,
    parse_checks,
    parse_dtypes,
    require_engine,
    verbosity,
)


def _samples(info, dtype, index: int | None) -> list:
    samples = list(info.sample_inputs(dtype, requires_grad=True))
    if index is None:
        return samples
    if not 0 <= index < len(samples):
        raise InputError(f"{info.name} has {len(samples)} samples for "
                         f"{str(dtype).rsplit('.', 1)[-1]} (0 to {len(samples) - 1}); "
                         "pick --sample in that range")
    return [samples[index]]


def _describe_sample(sample) -> str:
    shapes = ", ".join(f"{tuple(t.shape)}{'' if t.requires_grad else ' const'}"
                       for t in sample.tensors())
    others = [repr(a) for a in sample.args if not hasattr(a, "shape")]
    others += [f"{k}={v!r}" for k, v in sample.kwargs.items() if not hasattr(v, "shape")]
    return shapes + (f"; {', '.join(others)}" if others else "")


def run_op(info, dtypes, index, settings, rows: list | None = None) -> list:
    """``[(dtype name, sample, CheckResult, Report or None)]`` for every check,
    appended to ``rows`` as they come (so a Ctrl-C keeps what was done)."""
    from cli.pool import TaskTimeout, deadline
    from cli.results import TASK_CHECK, CheckResult
    from cli.sweep import check_sample, dtype_named
    rows = [] if rows is None else rows
    for name in dtypes:
        dtype = dtype_named(name)
        message = None
        try:
            with deadline(settings.timeout):
                for sample in _samples(info, dtype, index):
                    for result, report in check_sample(info, sample, dtype, settings, True):
                        rows.append((name, sample, result, report))
        except InputError:
            raise
        except TaskTimeout as exc:
            message = f"{exc} (--timeout)"
        except Exception as exc:  # noqa: BLE001 - making the samples failed
            message = f"could not make its samples: {type(exc).__name__}: {exc}"
        if message is not None:
            rows.append((name, None, CheckResult(info.name, name, None, TASK_CHECK, "error",
                                                 message, family=info.family), None))
    return rows


def _console():
    from rich.console import Console
    out = sys.stdout
    return Console(file=out, force_terminal=out.isatty(), no_color=not out.isatty(),
                   width=None if out.isatty() else 120, highlight=False)


def _header(console, info) -> None:
    from rich.text import Text

    from cli.commands.listing import describe
    meta = describe(info)
    console.print(Text(info.name, style="bold"), Text(
        f"family {info.family}, torch {info.torch_name or '-'}, dtypes "
        f"{' '.join(meta['dtypes'])}, mpmath reference {'yes' if meta['mpmath_ref'] else 'no'}"))
    for kf in info.known_failures:
        console.print(Text(f"known failure ({kf.check}): {kf.reason}", style="yellow"))


def _checks_table(rows, checks):
    from rich.table import Table
    from rich.text import Text

    from cli.formats.table import SHORT, STYLE
    table = Table(title="samples and checks", title_justify="left")
    for column in ("dtype", "#", "sample", "tensors", *checks):
        table.add_column(column)
    by_sample: dict = {}
    for dtype, sample, result, _ in rows:
        by_sample.setdefault((dtype, result.sample), (sample, {}))[1][result.check] = result
    for (dtype, index), (sample, found) in by_sample.items():
        cells = [Text(SHORT[found[c].status], style=STYLE[found[c].status]) if c in found
                 else Text("-", style="dim") for c in checks]
        desc = _describe_sample(sample) if sample is not None else ""
        if "setup" in found:
            desc += f"  error: {found['setup'].message}"
        table.add_row(dtype, "*" if index is None else str(index),
                      Text(sample.name if sample is not None else ""), Text(desc), *cells)
    return table


def _render(info, rows, settings, level: int) -> None:
    from rich.text import Text

    from cli import checkrun
    from cli.formats.detail import failure_panel
    from cli.formats.table import SHORT, STYLE
    from cli.sweep import dtype_named
    console = _console()
    _header(console, info)
    console.print(_checks_table(rows, settings.checks))
    for dtype, _, result, report in rows:
        if result.status == "failed" and report is not None:
            d = dtype_named(dtype)
            kwargs = checkrun.options(result.check, settings.policy, info.tolerance(d),
                                      info.supports("forward", d),
                                      True if result.check == "reference" else None)
            console.print(failure_panel(result, report, kwargs, settings.policy.engine,
                                        limit=99 if level > 0 else 2, plugins=settings.plugins))
        elif result.status in ("error", "known-failure") or (
                level > 0 and result.status == "skipped"):
            sample = "*" if result.sample is None else result.sample
            console.print(Text(f"{SHORT[result.status].upper()} {dtype}[{sample}] "
                               f"{result.check}: {result.message}", style=STYLE[result.status]))


def _json(info, rows) -> None:
    from cli.commands.listing import describe
    from cli.formats.json_format import _finite
    results = []
    for _, _, result, report in rows:
        entry = result.to_dict()
        entry["report"] = None if report is None else report.to_dict()
        results.append(entry)
    document = {"schema": "adcheck-op", "schema_version": 1, "op": describe(info),
                "results": results}
    json.dump(_finite(document), sys.stdout, indent=2, allow_nan=False)
    sys.stdout.write("\n")


def _html(path, info, rows, settings, dtypes, seconds, interrupted=False) -> None:
    from cli.formats.html import write_report
    from cli.results import RunReport
    policy = settings.policy
    recorded = {"op": info.name, "engine": policy.engine, "precise": policy.precise,
                "checks": list(settings.checks), "dtypes": dtypes, "seed": policy.seed,
                "timeout": settings.timeout, "plugins": list(settings.plugins)}
    write_report(path, RunReport("op", recorded, [result for _, _, result, _ in rows],
                                 interrupted=interrupted, seconds=seconds))


@click.command("op")
@click.argument("name")
@click.option("--sample", "index", type=int, metavar="K",
              help="Only sample K (its index in the op's samples for each dtype).")
@click.option("--dtype", "dtypes", multiple=True, metavar="LIST",
              help="Dtypes (comma-separated or repeated); default float64 and complex128.")
@check_options("reverse,forward,gradgrad,fwgrad_bwgrad,reference")
@click.option("--plugin", "plugins", multiple=True, type=click.Path(dir_okay=False),
              metavar="FILE", help="Also load the OpInfos defined in this Python file.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table",
              show_default=True, help="The detailed view, or JSON with the full gradcheck "
                                      "reports, Jacobians included (schema adcheck-op v1).")
@click.option("-v", "--verbose", is_flag=True, help="Every failing pair, and the skips.")
@html_option
def op(name, index, dtypes, checks, engine, precise, seed, timeout, plugins, fmt, verbose,
       html):
    """Check one operator in detail: its samples, every check, and for a
    failure both Jacobians side by side, the diagnosis and a reproducer."""
    from cli.checkrun import Policy
    from cli.commands.ops import load_registry
    from cli.reporting import check_writable
    from cli.sweep import Settings
    level = verbosity(verbose, False)
    check_writable(html)
    chosen_checks, chosen_dtypes = parse_checks(checks), parse_dtypes(dtypes)
    require_engine(engine)
    opinfo = load_registry(plugins)
    try:
        info = opinfo.get(name)
    except KeyError as exc:
        raise InputError(f"{exc.args[0].rstrip('?')}; run 'adcheck list' to see the "
                         "registry") from None
    if engine == "torch" and info.torch_name is None:
        raise InputError(f"{name} names no torch op (torch_name), so --engine torch cannot "
                         "check it; leave out --engine torch")
    own = [str(d).rsplit(".", 1)[-1] for d in info.dtypes]
    wanted = [d for d in (chosen_dtypes or ("float64", "complex128")) if d in own]
    if not wanted:
        raise InputError(f"{name} supports {', '.join(own)}; pick --dtype among them")
    settings = Settings(chosen_checks, Policy(precise, engine, seed), timeout,
                        tuple(str(p) for p in plugins))
    rows: list = []
    start = time.perf_counter()
    try:
        run_op(info, wanted, index, settings, rows)
    except KeyboardInterrupt:
        if html is not None:
            _html(html, info, rows, settings, wanted, time.perf_counter() - start, True)
            click.echo(f"interrupted: {html} holds the checks done so far", err=True)
        raise
    if fmt == "json":
        _json(info, rows)
    else:
        _render(info, rows, settings, level)
    if html is not None:
        _html(html, info, rows, settings, wanted, time.perf_counter() - start)
    failing = any(result.failing for _, _, result, _ in rows)
    raise click.exceptions.Exit(int(ExitCode.FAILED if failing else ExitCode.OK))
