"""``adcheck check FILE:OBJ --harvest``: the command line's side of harvesting.

``--harvest`` and ``--max-shapes`` are options of ``check``; ``harvest_report``
finds the model and its inputs (``--inputs``, else ``example_inputs()`` in
the file, else for a layer the shapes its first layer takes), runs
``runner.harvest`` in this process (the recorded inputs are the model's own
tensors) and returns the ``RunReport`` every format renders.
"""
from __future__ import annotations

import time

import click

from adcheck.cli.errors import InputError

#: where ``--harvest`` keeps its flag (``ctx.meta``): no parameter of ``check`` changes
FLAG = "adcheck.harvest"
SHAPES = "adcheck.harvest.max_shapes"
#: the function of the target's file that gives the inputs when --inputs is not given
EXAMPLE_INPUTS = "example_inputs"


def _store(key: str):
    def callback(ctx, _param, value):
        ctx.meta[key] = value
        return value
    return callback


def harvest_options(func):
    """``--harvest`` and ``--max-shapes`` (their values in ``ctx.meta``)."""
    func = click.option(
        "--max-shapes", type=click.IntRange(min=1), default=2, show_default=True,
        expose_value=False, callback=_store(SHAPES), metavar="N",
        help="With --harvest: check each Function at up to N distinct input shapes "
             "per module path.")(func)
    return click.option(
        "--harvest", is_flag=True, expose_value=False, callback=_store(FLAG),
        help="Run the model (a module class, a factory of no argument, an instance or a "
             "function) once at --inputs, or at what example_inputs() in the same file "
             "returns, or (a layer) at the shapes its first layer takes, record every "
             "custom autograd.Function, torch.library custom op, refengine Function and "
             "(--engine jax) custom_vjp/custom_jvp it applies, and check each at the "
             "inputs the model fed it, named PATH:Class (PATH: the submodule that applied "
             "it), then the whole model, saying where its failure comes from. Exit 3 when "
             "the model applies no custom Function (see docs/harvest.md).")(func)


def harvesting() -> bool:
    """Whether ``--harvest`` was given."""
    return bool(click.get_current_context().meta.get(FLAG))


def _built(target, spec: str, seed: int) -> tuple:
    import numpy as np

    from adcheck.runner.checks import derive_seed
    from adcheck.runner.spec import SpecError, build, parse
    try:
        parsed = parse(spec)
    except SpecError as exc:
        raise InputError(f"--inputs: {exc}") from None
    return tuple(build(parsed, target.engine, np.random.default_rng(
        derive_seed(seed, "inputs", 0))))


def _inputs(target, specs: tuple, seed: int) -> tuple:
    if len(specs) > 1:
        raise InputError("--harvest runs the model once: give one --inputs, not "
                         f"{len(specs)}")
    from adcheck.runner.spec import example_keywords
    if specs and example_keywords(specs[0]) is None:   # (else: example_inputs(), named)
        return _built(target, specs[0], seed)
    from adcheck.runner.target import source_module
    if target.engine == "jax":      # checked in float64, as --inputs' arrays are
        import jax
        jax.config.update("jax_enable_x64", True)
        from adcheck.gradcheck.engines.jaxcompiled import keep_compilations
        keep_compilations()     # (--harvest checks in this process, adcheck's own)
    make = getattr(source_module(target.spec), EXAMPLE_INPUTS, None)
    if not callable(make):
        from adcheck.cli.commands.inputs import layer_set
        from adcheck.cli.reporting import warn
        spec = layer_set(target, seed)
        if spec is not None:    # a model whose first layer says what it takes
            warn(f"--harvest runs {target.name} on {spec}, the shapes its first layer takes; "
                 f"give --inputs, or define {EXAMPLE_INPUTS}() in "
                 f"{target.spec.split(':')[0]}, to choose")
            return _built(target, spec, seed)
        raise InputError(f"--harvest needs the model's inputs: give --inputs \"randn(4, 8)\", "
                         f"or define {EXAMPLE_INPUTS}() in {target.spec.split(':')[0]} "
                         "returning them (a tensor or a tuple of tensors)")
    try:
        made = make()
    except Exception as exc:  # noqa: BLE001 - the user's code
        raise InputError(f"{EXAMPLE_INPUTS}() raised {type(exc).__name__}: {exc}; fix it or "
                         "give --inputs") from None
    return tuple(made) if isinstance(made, (tuple, list)) else (made,)


def _refuse_dtype_clash(target, inputs: tuple, pairs: list) -> None:
    """A model whose forward raised at --inputs of another dtype than all its
    parameters': the inputs' mistake (float64 unless a dtype word says
    otherwise), not the model's, said with the fix (exit 2)."""
    if len(pairs) != 1 or pairs[0][0].status != "error" or not target.kind.endswith("Module"):
        return
    result = pairs[0][0]
    params = {str(p.dtype).split(".")[-1] for p in target.func.parameters()
              if p.is_floating_point()}
    given = {str(x.dtype).split(".")[-1] for x in inputs if hasattr(x, "is_floating_point")
             and x.is_floating_point()}
    if not params or not given or params & given:
        return
    model, words = sorted(params)[0], sorted(given)[0]
    raise InputError(f"{result.message}: --inputs gave {words} tensors and the model's parameters "
                     f"are {model}; write the dtype in --inputs (e.g. 'randn(3, 5) {model}'), "
                     "or leave --inputs out to take the shapes and dtype of the first layer")


def harvest_report(target_text: str, specs: tuple, engine: str, settings, fail_fast: bool):
    """The ``RunReport`` of ``adcheck check TARGET --harvest``."""
    from adcheck.cli.options import require_engine
    from adcheck.runner.harvest import harvest_results
    from adcheck.runner.results import RunReport
    from adcheck.runner.target import resolve, seed_engines
    policy = settings.policy
    target = resolve(target_text, engine, policy.seed)
    require_engine(target.engine)
    inputs = _inputs(target, specs, policy.seed)
    seed_engines(policy.seed)       # a model that draws (dropout) draws the same every run
    from adcheck.cli import signals
    from adcheck.runner.tasks import recorded_warnings, warning_line
    from adcheck.runner.threads import one_torch_thread
    start, pairs, stopped = time.perf_counter(), [], False
    found = []      # (the model's warnings, each once, as a check run shows them)
    try:
        # (on one torch thread, as the runner's workers check)
        with recorded_warnings(target_text, found), one_torch_thread():
            harvest_results(target, inputs, settings,
                            click.get_current_context().meta.get(SHAPES, 2), pairs)
    except KeyboardInterrupt:   # (Ctrl-C, SIGTERM, SIGHUP: the checks that ended are reported)
        stopped = True
    finally:
        signals.defer()     # (the report is written next: no signal may cut it short)
    from adcheck.cli.reporting import warn
    for text, where in found:
        warn(warning_line(text, where))
    if specs:
        _refuse_dtype_clash(target, inputs, pairs)
    from adcheck.runner.record import RunRecord
    record = RunRecord.of(settings, engine=target.engine, fail_fast=fail_fast,
                          target=target_text, harvest=True)
    return RunReport("check", record, [r for r, _ in pairs],
                     seconds=time.perf_counter() - start, interrupted=stopped,
                     signal=signals.first() if stopped else None)
