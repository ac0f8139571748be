"""Second order of a kernel (``check(order=2)``): its vjp's own derivatives.

The kernel's vjp at a fixed cotangent, ``x -> J_kernel(x)^T v``, is a
function of the inputs like any other; so is the reference's. The second
order is judged by judging the first against the second exactly as a kernel
is judged against its reference (``gradcheck.kernels.judge``): the
reference's vjp in float64, the rounding of the same vjp computed in the
kernel's dtype (fused, then op by op) as the allowance, each comparison with
its resolution. Its Jacobian blocks are the second derivatives: reverse over
reverse (the vjp's vjp, ``gradgrad``) and, where the kernel's backward
supports forward mode, forward over reverse (the vjp's jvp,
``fwgrad_bwgrad``). Only the inputs are differentiated, not the cotangent:
the vjp is linear in it, with the first-order Jacobian already judged.

Before that, the reference's own second derivatives are checked in float64
(``gradcheck.check(order=2, precise=True)``): a reference wrong at second
order is reported as such, and the kernel's second order is not judged.

The vjp as a function is ``gradcheck.core.secondorder.first_derivative``'s,
the one every second-order check uses.
"""
from __future__ import annotations

import numpy as np
import torch

from adcheck.gradcheck.api import run as run_check
from adcheck.gradcheck.core.options import Options
from adcheck.gradcheck.core.secondorder import first_derivative
from adcheck.gradcheck.errors import GradcheckError
from adcheck.gradcheck.kernels import device
from adcheck.gradcheck.kernels.verdicts import one_line

#: the seed of the cotangent the vjps are taken at (fixed: a rerun is the same check)
SEED = 0
#: the words of the note on a second order whose reference failed
REFERENCE_FAILED = ("second order: the reference's own second derivatives are wrong in "
                    "float64, not the kernel's: fix the reference; the kernel's second order "
                    "was not judged")


def reference_check(ref, inputs: tuple, names: tuple, budget: int):
    """The reference's second order checked in float64 on the CPU (precise):
    ``None`` when it passes, else its ``Report``."""
    name, ref_name = names
    cpu64 = device.cast(inputs, torch.float64, torch.device("cpu"))
    try:
        report = run_check(ref, cpu64, Options(precise=True, order=2, name=ref_name,
                                               memory_budget=budget, seed=SEED))
    except GradcheckError as exc:
        raise ValueError(f"the reference {ref_name} has no second derivative to judge "
                         f"{name}'s against ({one_line(exc)}); order=2 needs a reference of "
                         "twice-differentiable torch ops") from None
    return None if report.passed else report


def cotangents(kp, seed: int = SEED) -> tuple:
    """One fixed random cotangent per differentiable output of the kernel: in
    [-1, 1), in the output's dtype on its device, not differentiated."""
    rng = np.random.default_rng(seed)
    found = []
    for o in kp.diff_out:
        out = kp.outputs[o]
        values = torch.from_numpy(rng.uniform(-1, 1, tuple(out.shape)))
        found.append(values.to(device=out.device, dtype=out.dtype))
    return tuple(found)


def _taped(first, diff_in: list, name: str):
    """``first`` (a vjp as a function) callable on inputs that do not require
    grad, as forward mode gives them (dual tensors): those are made leaves
    that do, so that the vjp inside can be taken."""
    def vjp(*args):
        args = list(args)
        for i in diff_in:
            if device.floating(args[i]) and not args[i].requires_grad:
                args[i] = args[i].requires_grad_()
        with torch.enable_grad():
            return first(*args)
    vjp.__name__ = name
    return vjp


def derivatives(funcs: tuple, inputs: tuple, kp, names: tuple) -> tuple:
    """``((kernel's vjp, reference's vjp), inputs + cotangents, their names)``:
    both vjps at the same cotangents, as functions of the inputs."""
    kernel, ref = funcs
    gos = cotangents(kp)
    rng = np.random.default_rng(SEED)   # unused: the cotangents are given
    vjp_names = tuple(f"{n}'s vjp" for n in names)
    first_k, args = first_derivative(kernel, inputs, gos, rng, names[0])
    where = device.wide_device(device.device_of(inputs))
    wide = device.cast(inputs, torch.float64, where)
    wide_gos = tuple(g.to(device=where, dtype=torch.float64) for g in gos)
    first_r, _ = first_derivative(ref, wide, wide_gos, rng, names[1])
    return ((_taped(first_k, kp.diff_in, vjp_names[0]),
             _taped(first_r, kp.diff_in, vjp_names[1])), args, vjp_names)


def not_differentiable(name: str, exc) -> ValueError:
    """The error of a kernel whose backward cannot be differentiated."""
    why = f" ({one_line(exc)})" if exc is not None else ""
    return ValueError(f"{name}'s backward cannot be differentiated{why}: order=2 judges the "
                      "vjp's own derivatives, so the backward must be made of differentiable "
                      "torch ops on the saved inputs (not @once_differentiable, not on detached "
                      "tensors or on intermediates saved by the forward, which are constants "
                      "to it); judge it with order=1")


def merge(report, sub, kp, reference_failed: bool = False) -> None:
    """The second order's results (``sub``: the vjps' check, or the
    reference's own failing second-order check) added to ``report``: marked
    ``order=2``, each output named as the gradient of the kernel's input it
    is; the vjps' forward values (the first-order vjp again) are left out."""
    for result in sub.results:
        if result.check == "value" or (reference_failed and result.passed):
            continue
        result.order = 2
        if not reference_failed and result.out_idx is not None \
                and result.out_idx < len(kp.diff_in):
            result.out_idx = kp.diff_in[result.out_idx]
        if reference_failed:
            note = "the reference's own second derivatives are wrong in float64, not the " \
                   "kernel's: fix the reference; the kernel's second order was not judged"
            result.detail = note if result.detail is None else f"{note}\n  {result.detail}"
        report.results.append(result)
    notes = report.coverage.setdefault("kernel", [])
    if reference_failed:
        notes.append(REFERENCE_FAILED)
        return
    notes += [f"second order: {note}" for note in sub.coverage.get("kernel", [])
              if note not in notes]   # the first order's notes hold for it too
    for label, jacobian in sub.jacobians.items():
        report.jacobians[f"second order, {label}"] = jacobian
    for label, count in getattr(sub, "counts", {}).items():
        report.counts[f"second order, {label}"] = count
