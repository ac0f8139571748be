"""``adcheck check``: validate a user's Function, function, or plugin OpInfos."""
from __future__ import annotations

import click

from adcheck.cli.errors import InputError
from adcheck.cli.harvest import harvest_options, harvest_report, harvesting
from adcheck.cli.options import (
    ENGINES,
    EXIT_STATUSES,
    allow_empty_option,
    check_options,
    explore_options,
    html_option,
    jacobian_option,
    parse_checks,
    report_options,
    require_engine,
    verbosity,
)

from adcheck.cli.commands.inputs import EXAMPLE

def _engine_given() -> bool:
    """Whether --engine was on the command line (not its default)."""
    from click.core import ParameterSource
    return click.get_current_context().get_parameter_source("engine") != \
        ParameterSource.DEFAULT


def _target_report(target_text, specs, args, engine, settings, jobs, fail_fast, level):
    from adcheck.cli.commands.inputs import input_sets
    from adcheck.cli.reporting import warn
    from adcheck.cli.runs import recorded, run
    from adcheck.runner.target import engine_hint, resolve
    from adcheck.runner.tasks import TargetTask
    target = resolve(target_text, engine)
    if not _engine_given():
        engine = _examples_engine(target, specs, engine)
        target = resolve(target_text, engine) if engine != target.engine else target
    require_engine(target.engine)
    hint = None if _engine_given() else engine_hint(target, engine)
    if hint is not None:
        raise InputError(hint)
    policy = settings.policy
    chosen, layouts, notes = input_sets(target, specs, args, policy.seed, settings.timeout)
    for note in notes:
        warn(note)
    tasks = [TargetTask(i, target_text, text, engine, settings, target.name)
             for i, text in enumerate(chosen)]
    record = recorded(settings, engine=target.engine, fail_fast=fail_fast, target=target_text,
                      kind=target.kind, inputs=[t.inputs for t in tasks], layouts=layouts)
    report = run("check", tasks, jobs, fail_fast, level, record)
    if not specs:
        _complex_only(report, target.name, chosen)
    return report


def _examples_engine(target, specs: tuple, engine: str) -> str:
    """The engine of a plain function's ``example_inputs()`` tensors where they are
    its inputs (no --inputs, or --inputs 'example_inputs()'): a file that builds
    torch tensors for it says which engine it is written for. Else ``engine``."""
    from adcheck.cli.commands.inputs import _has_example
    from adcheck.runner.spec import example_keywords
    from adcheck.runner.subjects import example_tensors
    from adcheck.gradcheck.engines import engine_for
    examples = not specs or any(example_keywords(s) is not None for s in specs)
    if target.kind != "function" or not examples or not _has_example(target):
        return engine
    try:
        return engine_for(example_tensors(target)).name
    except Exception:  # noqa: BLE001 - a bad example_inputs() is refused with its reason later
        return engine


def _complex_only(report, name: str, chosen: list) -> None:
    """Say when the checks that failed or raised did so on the default complex
    set alone: a function meant for real inputs (an activation whose forward
    runs on complex tensors) is then told how to check only those."""
    from adcheck.cli.reporting import warn
    complex_sets = {i for i, spec in enumerate(chosen) if "complex128" in spec}
    bad = [r for r in report.results if r.status in ("failed", "error")]
    if complex_sets and bad and all(r.sample in complex_sets for r in bad):
        real = [spec for spec in chosen if "complex128" not in spec]
        given = " ".join(f"--inputs '{spec}'" for spec in real) or "--inputs 'randn(3, 4)'"
        warn(f"every failure and error is on the default complex inputs: if {name} is meant "
             f"for real inputs only, check it on real ones alone ({given}); a missing conj() "
             "shows only on complex ones")


def _plugin_report(plugin, settings, dtypes, jobs, fail_fast, level):
    from adcheck.cli.runs import load_registry, plugin_ops, sweep
    registry = load_registry()
    infos = [registry.get(name) for name in plugin_ops(registry, plugin)]
    if not infos:
        raise InputError(f"plugin {plugin!r} registered no OpInfo; call opinfo.register(...) "
                         "in it, or define OPINFOS = [...]")
    return sweep(infos, dtypes, settings, jobs, fail_fast, level, command="check",
                 patterns=[], family=None, target=plugin)


@click.command("check", epilog=EXIT_STATUSES)
@click.argument("target", required=False, metavar="[MODULE:OBJECT]")
@click.option("--inputs", "specs", multiple=True, metavar="SPEC",
              help=f"Inputs of the object, parsed (never evaluated), e.g. \"{EXAMPLE}\". "
                   "Each input in this order: a constructor (randn rand randint zeros ones "
                   "full eye arange); then '+ c', '* c' steps; then a dtype word (float64 "
                   "default; float32, complex128, complex64, float16, bfloat16, and int64 "
                   "int32 int16 int8 uint8 bool for index tensors, never differentiated) "
                   "and 'nograd': 'randn(3) * 2 float32 nograd'. Or 'example_inputs()', "
                   "what that function "
                   "of the object's file returns. Repeat for more input sets. Default: "
                   "example_inputs() where the file defines it; else randn(3, 4) per "
                   "positional argument, a broadcast set and a complex set, each kept "
                   "when the object runs on it; for a layer (nn.Module) the shapes its first "
                   "layer takes (see docs/check.md).")
@click.option("--args", "args", metavar="KEYWORDS",
              help="Non-tensor arguments passed by name to every call, parsed (never "
                   "evaluated): --args 'dim=1, keepdim=True'. Values: numbers, True, False, "
                   "None, 'text', tuples (0, 1).")
@click.option("--plugin", type=click.Path(dir_okay=False), metavar="FILE",
              help="Check the OpInfos defined in this Python file instead of MODULE:OBJECT.")
@click.option("--against", metavar="MODULE:REF",
              help="Judge MODULE:OBJECT as a low-precision kernel against this reference of "
                   "ordinary torch ops run in float64 (not an mpmath reference); --inputs in "
                   "the kernel's dtype. See docs/kernels.md.")
@click.option("--device", "device_name", metavar="DEVICE",
              help="With --against: the torch device the kernel's inputs live on (cpu, cuda, "
                   "...; default cpu).")
@click.option("--dtype", "dtypes", multiple=True, metavar="LIST",
              help="With --plugin: dtypes to check (default float64, complex128). "
                   "MODULE:OBJECT's inputs take theirs from --inputs ('randn(3) float32').")
@check_options("reverse,forward,gradgrad", engines=ENGINES + ("jax",))
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=1, show_default=True,
              help="Worker processes; the results are the same for any number "
                   "(--harvest checks in this process).")
@report_options
@allow_empty_option
@harvest_options
@html_option
@explore_options
@jacobian_option
def check(target, specs, args, plugin, dtypes, checks, engine, precise, seed, timeout,
          memory_budget, jobs, fmt, junit_xml, baseline, write_baseline, fail_fast, verbose, quiet,
          allow_empty, html, against=None, device_name=None, explore=False,
          explore_budget=None, jacobian="auto"):
    """Validate your own derivative formulas.

    MODULE:OBJECT names a refengine or torch autograd.Function subclass, a
    JAX function (jax.custom_vjp, jax.custom_jvp or jax.jit, checked on JAX
    in 64-bit mode), a plain function of tensors ('mypkg.ops:MyExp' or
    'path/to/ops.py:MyExp'), or a refengine or torch nn.Module (a class
    built with no argument, a factory function of no argument, or an
    instance), checked in its inputs and its parameters, in double
    precision, each failure naming the parameter. --engine picks the engine
    of a plain function; the others, and torch's, JAX's and refengine's
    own functions ('torch:sin', 'jax.nn:gelu'), are checked on their own
    engine.
    """
    from adcheck.cli.options import parse_dtypes
    from adcheck.cli.reporting import check_writable, finish, load_baseline
    from adcheck.cli.runs import build, prestart
    level = verbosity(verbose, quiet)
    if dtypes and plugin is None:   # (taken silently before, and never applied)
        raise InputError("--dtype applies to the OpInfos of --plugin; for MODULE:OBJECT write "
                         "the dtype in --inputs, e.g. --inputs 'randn(3, 5) float32'")
    if against is not None or device_name is not None:
        from adcheck.cli.kernelcheck import kernel_check
        if against is None:
            raise InputError("--device applies to a kernel judged --against a reference")
        return kernel_check(target, against, specs, device_name, seed, memory_budget, fmt, level,
                            explore)
    check_writable(junit_xml, write_baseline, html)
    if (target is None) == (plugin is None):
        raise InputError("give either MODULE:OBJECT or --plugin FILE (one of them); see "
                         "'adcheck check --help'")
    if plugin is not None and (specs or args):
        raise InputError("--inputs and --args apply to MODULE:OBJECT; a plugin's OpInfos "
                         "bring their own samples")
    chosen_checks, chosen_dtypes = parse_checks(checks), parse_dtypes(dtypes)
    require_engine(engine)
    accepted = load_baseline(baseline)
    prestart()
    settings = build(chosen_checks, engine, precise, seed, timeout, memory_budget,
                     (plugin,) if plugin else (), explore=explore,
                     explore_budget=explore_budget, jacobian=jacobian)
    if plugin is not None:
        report = _plugin_report(str(plugin), settings, chosen_dtypes, jobs, fail_fast, level)
    elif harvesting():
        if jobs > 1:   # (said, not refused: a -j kept in a script changes no verdict)
            from adcheck.cli.reporting import warn
            warn(f"--jobs {jobs} is not used with --harvest: the harvested Functions' inputs "
                 "live in this process, which checks them one after the other")
        report = harvest_report(target, specs, engine, settings, fail_fast)
    else:
        report = _target_report(target, specs, args, engine, settings, jobs, fail_fast, level)
    finish(report, fmt, junit_xml, accepted, baseline, write_baseline, level, html,
           allow_empty=allow_empty)
