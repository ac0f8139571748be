"""``adcheck op NAME``: one operator in detail."""
from __future__ import annotations

import sys

import click

from adcheck.cli.errors import InputError
from adcheck.cli.options import (
    EXIT_STATUSES,
    FormatChoice,
    allow_empty_option,
    check_options,
    html_option,
    jacobian_option,
    parse_checks,
    parse_dtypes,
    registry_option,
    require_engine,
    verbosity,
)


def _dtypes(registry, info, chosen, engine: str) -> list:
    from adcheck.runner.registry import TORCH_ONLY, dtype_name
    from adcheck.runner.selection import default_dtypes
    own = [dtype_name(d) for d in info.dtypes]
    if engine == "torch" and registry.engine is None:
        # bfloat16 and float16 from the float32 samples
        own += [n for n, source in TORCH_ONLY.items() if source in own and n not in own]
    wanted = [d for d in (chosen or default_dtypes(registry, info)) if d in own]
    if not wanted:
        raise InputError(f"{info.name} supports {', '.join(own)}; pick --dtype among them")
    return wanted


@click.command("op", epilog=EXIT_STATUSES)
@click.argument("name")
@click.option("--sample", "index", type=int, metavar="K",
              help="Only sample K (its index in the op's samples for each dtype).")
@click.option("--dtype", "dtypes", multiple=True, metavar="LIST",
              help="Dtypes (comma-separated or repeated); default float64 and complex128 "
                   "(with --registry torch: every dtype the op supports backward for).")
@registry_option
@check_options("reverse,forward,gradgrad,fwgrad_bwgrad,reference")
@click.option("--plugin", "plugins", multiple=True, type=click.Path(dir_okay=False),
              metavar="FILE", help="Also load the OpInfos defined in this Python file.")
@click.option("--format", "fmt", type=FormatChoice(["table", "json"]), default="table",
              show_default=True, help="The detailed view, or JSON with the full gradcheck "
                                      "reports, Jacobians included (schema adcheck-op v1).")
@click.option("-v", "--verbose", is_flag=True, help="Every failing pair, and the skips.")
@allow_empty_option
@html_option
@jacobian_option
def op(name, index, dtypes, registry_name, checks, engine, precise, seed, timeout,
       memory_budget, plugins, fmt, verbose, allow_empty, html, jacobian="auto"):
    """Check one operator in detail: its samples, every check, and for a
    failure both Jacobians side by side, the diagnosis and a reproducer."""
    from adcheck.cli.output import publish, render
    from adcheck.cli.reporting import announce, check_writable
    from adcheck.cli.runs import (
        build,
        load_registry,
        open_registry,
        prestart,
        recorded,
        registry_defaults,
        run,
    )
    from adcheck.runner.registry import describe
    from adcheck.runner.selection import get_op, plan
    level = verbosity(verbose, False)
    check_writable(html)
    # --sample K may name any sample of the op, not only those a sweep takes
    options = {} if registry_name == "opinfo" or index is None else {"samples": None}
    registry = open_registry(registry_name, plugins, **options)
    checks, engine = registry_defaults(registry, checks, engine)
    chosen_checks = parse_checks(checks)
    chosen_dtypes = parse_dtypes(dtypes, registry.dtype_names)
    require_engine(engine)
    prestart(registry)
    load_registry(plugins, registry)
    info = get_op(registry, name)
    if engine == "torch" and info.torch_name is None and registry.name == "opinfo":
        raise InputError(f"{name} names no torch op (torch_name), so --engine torch cannot "
                         "check it; leave out --engine torch")
    wanted = _dtypes(registry, info, chosen_dtypes, engine)
    settings = build(chosen_checks, engine, precise, seed, timeout, memory_budget, plugins,
                     registry, keep_reports=True, jacobian=jacobian)
    tasks = plan([info], wanted, settings, sample=index)
    report = run("op", tasks, 1, False, -1, recorded(settings, op=info.name, dtypes=wanted,
                                                    allow_empty=allow_empty))
    report.subject = describe(info)
    announce(report)
    color = sys.stdout.isatty()
    files = []
    if html is not None:
        from adcheck.cli.formats.html import page
        files.append((html, page, None))
    status = publish(report, lambda r: render(f"op-{fmt}", r, color=color, verbosity=level),
                     files)
    if report.interrupted and html is not None:
        click.echo(f"interrupted: {html} holds the checks done so far", err=True)
    raise click.exceptions.Exit(status)
