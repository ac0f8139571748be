"""``adcheck check FILE:KERNEL --against FILE:REF``: a kernel judged by its reference.

The kernel and the reference are resolved as ``adcheck check`` resolves its
target (a torch autograd.Function subclass or a plain function; the
reference must be a plain function of torch ops). ``--inputs`` gives the
kernel's inputs in its own dtype (``randn(4, 64) bfloat16; ...``), built
with ``--seed`` on the CPU and moved to ``--device``. The verdict is
``gradcheck.kernels.check``'s, printed by ``kernels.summary`` (or as JSON
with ``--format json``). ``--check`` picks what is judged beyond the values
and vjps: ``forward`` (the jvp; judged by default), ``gradgrad`` and
``fwgrad_bwgrad`` (the second order, only when asked). Unless ``--no-explore``,
the kernel is judged again at its inputs times ``TINY`` (the quick pass:
tiny magnitudes). Exit 0 when it passes, 1 when a comparison fails,
2 (one line) for bad input: a reference that raises in float64 or returns
other outputs, a device that is not available, a spec that does not parse.
"""
from __future__ import annotations

import json
import math

import click

from adcheck.cli.errors import InputError
from adcheck.cli.exit_codes import ExitCode


def _resolved(text: str, role: str):
    from adcheck.runner.errors import RunnerError
    from adcheck.runner.target import resolve
    try:
        target = resolve(text, "torch")
    except RunnerError as exc:
        raise InputError(f"{role} {text}: {exc}") from None
    if target.engine != "torch":
        raise InputError(f"{role} {text} is a {target.kind}; kernels are judged on torch: give "
                         "a torch autograd.Function subclass or a function of torch tensors")
    return target


def _device(name: str | None):
    import torch
    if name is None:
        return torch.device("cpu")
    try:
        where = torch.device(name)
        torch.zeros(1, device=where)
    except (RuntimeError, TypeError, AssertionError) as exc:
        reason = " ".join(str(exc).split())[:160]
        raise InputError(f"--device {name}: not available here ({reason}); pick one of this "
                         "machine's devices (cpu, or cuda when torch sees a GPU)") from None
    return where


def _inputs(specs: tuple, arity: int | None, seed: int, where) -> tuple:
    import numpy as np

    from adcheck.runner.spec import SpecError, build, parse
    if len(specs) != 1:
        raise InputError("--against needs the kernel's inputs, once: --inputs "
                         "\"randn(4, 64) bfloat16; randn(64) bfloat16\" (in the kernel's dtype)")
    try:
        parsed = parse(specs[0])
    except SpecError as exc:
        raise InputError(f"--inputs: {exc}") from None
    if arity is not None and len(parsed) != arity:
        raise InputError(f"--inputs gives {len(parsed)} input(s) and the kernel takes {arity}")
    made = build(parsed, "torch", np.random.default_rng(seed))
    return tuple(x.detach().to(where).requires_grad_(x.requires_grad) for x in made)


#: the --check names a kernel check takes: value and vjp are always judged
KERNEL_CHECKS = ("reverse", "forward", "gradgrad", "fwgrad_bwgrad")


def _order_and_forward() -> tuple:
    """``(order, check_forward_ad)`` from ``--check``: first order, the jvp
    included, unless --check is given; gradgrad or fwgrad_bwgrad ask for the
    second order (the vjp's own derivatives), forward or fwgrad_bwgrad for
    forward mode."""
    from click.core import ParameterSource
    ctx = click.get_current_context()
    if ctx.get_parameter_source("checks") == ParameterSource.DEFAULT:
        return 1, True
    from adcheck.cli.options import parse_checks
    names = parse_checks(ctx.params["checks"])
    other = [n for n in names if n not in KERNEL_CHECKS]
    if other:
        raise InputError(f"--check {','.join(other)} does not apply to a kernel judged "
                         f"--against a reference; its checks: {', '.join(KERNEL_CHECKS)} "
                         "(its forward value and vjp are always judged)")
    second = "gradgrad" in names or "fwgrad_bwgrad" in names
    return (2 if second else 1), ("forward" in names or "fwgrad_bwgrad" in names)


#: the quick pass of a kernel (on unless --no-explore): its floating point inputs
#: times this, where an eps added to x * x meets it (a norm's eps dropped from its
#: backward shows there and nowhere near randn); a larger scale is no point of
#: derivatives but of range (float16 overflows at 1e3 in correct kernels)
TINY = 1e-3


def _scaled(inputs: tuple, factor: float) -> tuple:
    return tuple((x.detach() * factor).to(x.dtype).requires_grad_(x.requires_grad)
                 if x.is_floating_point() or x.is_complex() else x for x in inputs)


def kernel_check(target: str | None, against: str, specs: tuple, device_name: str | None,
                 seed: int, memory_budget: int, fmt: str, level: int,
                 explore: bool | None = None) -> None:
    """Run the check and exit with its status (see the module docstring);
    ``explore`` not False: judge the kernel at its inputs times ``TINY`` too."""
    from adcheck.gradcheck import kernels
    from adcheck.gradcheck.errors import GradcheckError
    if target is None:
        raise InputError("--against judges a kernel: give it as FILE:KERNEL, e.g. "
                         "adcheck check ops.py:fused_norm --against ops.py:norm_reference")
    order, forward = _order_and_forward()
    kernel, ref = _resolved(target, "kernel"), _resolved(against, "--against")
    where = _device(device_name)
    inputs = _inputs(specs, kernel.arity, seed, where)

    def judged(at: tuple):
        try:
            return kernels.check(kernel.func, at, against=ref.func, name=kernel.name,
                                 memory_budget=memory_budget * 2**20, order=order,
                                 check_forward_ad=forward)
        except (ValueError, TypeError, GradcheckError) as exc:
            raise InputError(str(exc)) from None
    report = judged(inputs)
    tiny = judged(_scaled(inputs, TINY)) if explore is not False else None
    out_of_range = tiny is not None and _out_of_range(tiny, inputs)
    if out_of_range:
        tiny = None
    passed = report.passed and (tiny is None or tiny.passed)
    if fmt == "json":
        doc = report.to_dict()
        if tiny is not None:
            doc["tiny"] = {"scale": TINY, **tiny.to_dict()}
        if out_of_range:
            doc["tiny"] = {"scale": TINY, "judged": False, "why": OUT_OF_RANGE}
        click.echo(json.dumps(doc, default=str))
    else:   # (-q: the verdict and the failing comparisons, as other checks print)
        click.echo(kernels.summary(report, failures_only=level < 0))
        # (-q: the tiny magnitudes' failures only where they are the run's only ones)
        if tiny is not None and (level > 0 or not tiny.passed and (report.passed or level == 0)):
            click.echo(f"at its inputs times {TINY:g} (the quick pass: tiny magnitudes, where "
                       "an eps added to x * x matters; --no-explore leaves it out):")
            click.echo(kernels.summary(tiny, failures_only=level < 0))
        if out_of_range and level >= 0:
            click.echo(f"at its inputs times {TINY:g}: not judged ({OUT_OF_RANGE})")
    click.get_current_context().exit(ExitCode.OK if passed else ExitCode.FAILED)


#: why a float16 kernel's quick pass says nothing where its values leave the range
OUT_OF_RANGE = ("the float16 kernel's vjp or jvp is inf or NaN there, past float16's range "
                "(65504), where the float64 reference's are finite: tiny magnitudes judge "
                "no formula in float16; check it at magnitudes it can hold")


def _out_of_range(tiny, inputs: tuple) -> bool:
    """Whether a float16 kernel's quick pass failed only where its own values are
    not finite: a correct kernel computed op by op in float16 overflows there
    (an RMS norm's 1 / rms**3 at 256 features), which says nothing of its
    formula; a wrong one that stays finite still fails."""
    import torch
    half = any(getattr(x, "dtype", None) == torch.float16 for x in inputs)
    failing = [r for r in tiny.results if not r.passed]
    return half and bool(failing) and all(not math.isfinite(r.max_error) for r in failing)
