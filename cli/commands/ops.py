"""``adcheck ops``: sweep the operator registry."""
from __future__ import annotations

import os

import click

from adcheck.cli.errors import InputError
from adcheck.cli.options import (
    EXIT_STATUSES,
    allow_empty_option,
    check_options,
    explore_options,
    html_option,
    jacobian_option,
    parse_checks,
    parse_dtypes,
    registry_option,
    report_options,
    require_engine,
    verbosity,
)


@click.command("ops", epilog=EXIT_STATUSES)
@click.argument("patterns", nargs=-1, metavar="[PATTERN]...")
@click.option("--family", "families", multiple=True, metavar="NAME",
              help="Only ops of this family (repeatable); see 'adcheck list'.")
@click.option("--dtype", "dtypes", multiple=True, metavar="LIST",
              help="Dtypes to check, comma-separated or repeated (float32, float64, "
                   "complex64, complex128; bfloat16 and float16 with --engine torch; "
                   "with --registry torch also complex32). Default: float64 and complex128 "
                   "(with --registry torch: every dtype the op supports backward for).")
@click.option("--low-precision", is_flag=True,
              help="Also check float32 and complex64, and with --engine torch bfloat16 and "
                   "float16: each formula against the op's float64 run, within the rounding "
                   "its dtype allows (see the README's 'Low precision').")
@registry_option
@check_options("reverse,forward,gradgrad,reference")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=lambda: os.cpu_count() or 1,
              show_default="the number of CPUs",
              help="Worker processes; the results are the same for any number.")
@click.option("--plugin", "plugins", multiple=True, type=click.Path(dir_okay=False),
              metavar="FILE", help="Also load the OpInfos defined in this Python file.")
@click.option("--shard", metavar="K/N",
              help="Run only shard K of N of the selection: a deterministic part, balanced "
                   "by measured or estimated cost, the same on every machine. Save each "
                   "shard's --format json and join them with 'adcheck merge'.")
@report_options
@allow_empty_option
@html_option
@explore_options
@jacobian_option
def ops(patterns, families, dtypes, low_precision, registry_name, checks, engine, precise, seed,
        timeout, memory_budget, jobs, plugins, shard, fmt, junit_xml, baseline, write_baseline,
        fail_fast, verbose, quiet, allow_empty, html, explore=False, explore_budget=None,
        jacobian="auto"):
    """Sweep the operator registry and check every op's derivatives.

    PATTERN selects ops by name, with shell wildcards ('log*'); none means
    all.
    """
    from adcheck.cli.reporting import check_writable, finish, load_baseline
    from adcheck.cli.runs import (
        build,
        load_registry,
        open_registry,
        prestart,
        registry_defaults,
        select,
        sweep,
    )
    from adcheck.runner.shard import parse_shard
    level = verbosity(verbose, quiet)
    check_writable(junit_xml, write_baseline, html)
    registry = open_registry(registry_name, plugins)
    # (first: the workers' libraries import while this process imports its own)
    prestart(registry)
    checks, engine = registry_defaults(registry, checks, engine)
    chosen_checks = parse_checks(checks)
    chosen_dtypes = parse_dtypes(dtypes, registry.dtype_names)
    part = None if shard is None else parse_shard(shard)
    require_engine(engine)
    from adcheck.runner.selection import planned_dtypes
    if not registry.chooses_dtypes or chosen_dtypes is not None:
        # (a registry's own default, torch's op_db's, has every dtype the op supports)
        chosen_dtypes = planned_dtypes(chosen_dtypes, low_precision, engine)
    accepted = load_baseline(baseline, registry.name)
    load_registry(plugins, registry)
    infos = select(registry, patterns, families, engine)
    if engine == "torch" and not infos:
        raise InputError("no selected op names a torch op (torch_name), so --engine torch "
                         "has nothing to check")
    settings = build(chosen_checks, engine, precise, seed, timeout, memory_budget, plugins,
                     registry, explore=explore, explore_budget=explore_budget,
                     jacobian=jacobian)
    report = sweep(infos, chosen_dtypes, settings, jobs, fail_fast, level, shard=part,
                   patterns=list(patterns), family=list(families) or None, target=None)
    finish(report, fmt, junit_xml, accepted, baseline, write_baseline, level, html,
           allow_empty=allow_empty)
