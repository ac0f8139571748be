"""``check(kernel, inputs, against=ref)``: a low-precision kernel judged by its reference.

The order of one check (after one run of the kernel, which sizes it: whole
Jacobians beyond ``memory_budget`` are refused before any costly work):

1. *The reference first.* ``ref`` takes the kernel's arguments and is made of
   ordinary ops; its own derivatives are checked in float64 with the precise
   check (Richardson extrapolation, ``gradcheck.check(precise=True)``) on a
   CPU copy of the inputs. A wrong reference is reported as such, under the
   reference's name, and the kernel is not judged; a reference that raises
   in float64, or has no differentiable output, is a ``ValueError``.
2. *The kernel's run,* in its own dtype on its own device, ``repeats`` times:
   its outputs, its vjps for every output coordinate (every row of its
   Jacobian) and its jvps where it defines them. Runs that differ beyond
   rounding are nondeterminism; within it, their spread widens the
   allowance (``gradcheck.kernels.verdicts.spread``).
3. *The verdict:* its values and Jacobians against the reference's float64
   ones (run on the device, or on the CPU when the device has no float64),
   entry by entry within the rounding allowance of
   ``gradcheck.kernels.rounding``, each comparison with its resolution.

``order=2`` judges the kernel's vjp against the reference's the same way
(``gradcheck.kernels.second``); complex kernels are judged as the real
function of their real and imaginary parts (``gradcheck.kernels.complexes``).

A kernel that returns another dtype than its inputs' (float32 from bfloat16)
is judged in the dtype it returns, its gradients in their inputs' dtype; the
report's notes say so (``Report.coverage["kernel"]``).
"""
from __future__ import annotations

import time

import torch

from adcheck.gradcheck.api import run as run_check
from adcheck.gradcheck.core.budget import DEFAULT_BUDGET
from adcheck.gradcheck.core.jacobian import Jacobian, Layout
from adcheck.gradcheck.core.options import Options
from adcheck.gradcheck.core.problem import Problem, function_name
from adcheck.gradcheck.errors import GradcheckError, UncheckableError
from adcheck.gradcheck.kernels import complexes, device, kinks, rounding, second, verdicts
from adcheck.gradcheck.verdict.report import Report

#: runs of the kernel compared for nondeterminism
REPEATS = 3


def check(kernel, inputs, *, against, name: str | None = None, repeats: int = REPEATS,
          check_forward_ad: bool = True, memory_budget: int = DEFAULT_BUDGET,
          fused: bool | None = None, order: int = 1) -> Report:
    """Judge ``kernel`` at ``inputs`` against the reference ``against`` (see the
    module docstring) and return a ``Report``.

    ``inputs``: torch tensors in the kernel's dtype on its device, those to
    check requiring grad. ``against``: a function of ordinary ops with the
    kernel's signature that runs in float64 (not an mpmath reference: that is
    ``gradcheck.check(reference=...)``). ``check_forward_ad``: also judge the
    kernel's jvp (skipped, said in the notes, when it defines none).
    ``repeats`` (>= 1): runs compared for nondeterminism. ``fused``: how the
    kernel rounds (``gradcheck.kernels.rounding.computations``): ``None``
    judges each comparison within one fused computation's rounding, else
    within the op-by-op one, saying so; ``True`` declares a bfloat16 or
    float16 kernel that computes in float32 and rounds once (the finer
    allowance only); ``False``, one that rounds every intermediate.
    ``order=2`` also judges the kernel's vjp's own derivatives against the
    reference's, the same way (``gradcheck.kernels.second``).
    ``verdicts.summary(report)`` words the result.
    """
    start = time.perf_counter()
    inputs = _validated(kernel, inputs, against, repeats)
    if fused not in (None, True, False):
        raise ValueError(f"check: fused must be None, True or False, not {fused!r}")
    if order not in (1, 2) or isinstance(order, bool):
        raise ValueError(f"check: order must be 1 or 2, not {order!r}")
    names = (name or function_name(kernel), function_name(against))
    kernel, against, inputs, notes = complexes.prepared(kernel, against, inputs)
    home = device.device_of(inputs)
    kp = _kernel_problem(kernel, inputs, names[0])
    _within_budget(kp, names[0], repeats, memory_budget)   # before any costly work
    own, kink_at = _reference_first(against, inputs, names[1], names[0], memory_budget)
    if own is not None:
        return own
    report = Report(names[0], "torch", settings={
        "against": names[1], "repeats": repeats, "fused": fused, "order": order,
        "device": str(home), "memory_budget": memory_budget})
    report.coverage["kernel"] = list(notes)
    how = (repeats, check_forward_ad, fused, memory_budget)
    moves = _compare(report, (kernel, against), inputs, kp, names, how, kink_at,
                     keep_moves=order == 2)
    if order == 2:
        _second_order(report, (kernel, against), inputs, kp, names, how, moves)
    if notes:   # complex inputs
        complexes.annotate(report)
        report.settings["complex"] = True
    report.seconds = time.perf_counter() - start
    return report


def _compare(report, funcs, inputs, kp, names, how, kink_at: dict | None = None,
             order: int = 1, moves: tuple | None = None, keep_moves: bool = False) -> dict:
    """The kernel ``funcs[0]`` against the reference ``funcs[1]`` (checked
    already) at ``inputs``: results, Jacobians and notes added to ``report``;
    ``kink_at``: where the reference failed its own check and its one-sided
    derivatives cleared it (``kinks.between_sides``). ``order`` 2: the kernel is
    a vjp, whose formula may reuse the forward's rounded output: the first
    order's term 5 is carried over through ``moves`` (``(rounding.output_moves,
    the first order's inputs)``, ``rounding.reused_output_terms``). Returns the
    first order's moves where ``keep_moves`` (a second order follows), else ``{}``."""
    kernel, against = funcs
    repeats, check_forward_ad, fused, memory_budget = how
    home = device.device_of(inputs)
    where = device.wide_device(home)
    wide = device.cast(inputs, torch.float64, where)
    expected_out = device.run(against, wide)
    _match(kp, expected_out, *names)
    notes, dtype, grad_dtype = _dtypes(kp)
    measured = {way: rounding.measure(computation, inputs, dtype, where, kp.diff_in,
                                      kp.diff_out, memory_budget)
                for way, computation in rounding.computations(against, dtype, fused).items()}
    if where != home:
        notes.append(f"{home.type} has no float64: the reference ran on the CPU")
    layout = Layout({i: tuple(inputs[i].shape) for i in kp.diff_in}, dict.fromkeys(kp.diff_in,
                    False), {o: tuple(expected_out[o].shape) for o in kp.float_out},
                    dict.fromkeys(kp.float_out, False))
    expected = Jacobian("reverse", layout, device.reverse_blocks(
        expected_out, wide, kp.diff_in, kp.diff_out, memory_budget))
    report.jacobians["float64 reference"] = reference = expected
    second_differences = rounding.curvature_of(against, wide)
    extras = rounding.reused_output_terms(reference, second_differences, *moves) if moves else {}
    judged, start = {i: dict(found) for i, found in (kink_at or {}).items()}, len(report.results)
    for _ in range(2):
        # (again, once, where the kernel fails only at kinks or ties the reference passed
        # its own check at: torch.maximum splits a tie's gradient, max_pool gives it to one)
        curvature = (rounding.curvature_entries(reference, kinks.at_kinks(judged)),
                     second_differences)
        expected, widen = kinks.widened(reference, against, wide, judged)
        told = list(notes)
        _judge(report, kernel, inputs, kp, expected, expected_out, measured,
               (dtype, grad_dtype, memory_budget, repeats, check_forward_ad, widen, curvature,
                extras), told)
        more = kinks.at_failures(report.results[start:], report.jacobians, reference, against,
                                 wide, judged) if order == 1 else {}
        if not more:
            break
        del report.results[start:]
        for i, found in more.items():
            judged.setdefault(i, {}).update(found)
    if judged:
        told += kinks.describe(judged, wide)
    report.coverage.setdefault("kernel", []).extend(told)
    if not keep_moves:
        return {}
    return rounding.output_moves(reference, measured, second_differences,
                                 max(rounding.epsilon_of(dtype), rounding.epsilon_of(grad_dtype)))


def _second_order(report, funcs, inputs, kp, names, how, moves: dict) -> None:
    """``order=2``: the reference's own second derivatives first, then the
    kernel's vjp judged against the reference's as a kernel of its own."""
    own = second.reference_check(funcs[1], inputs, names, how[3])
    if own is not None:
        second.merge(report, own, kp, reference_failed=True)
        return
    derived, args, vjp_names = second.derivatives(funcs, inputs, kp, names)
    try:
        vkp = _kernel_problem(derived[0], args, vjp_names[0])
    except GradcheckError as exc:
        raise second.not_differentiable(names[0], exc) from None
    if not vkp.diff_out:
        raise second.not_differentiable(names[0], None)
    _within_budget(vkp, vjp_names[0], how[0], how[3])
    sub = Report(vjp_names[0], "torch")
    try:
        _compare(sub, derived, args, vkp, vjp_names, how, order=2, moves=(moves, kp.diff_in))
    except RuntimeError as exc:   # a backward that refuses to be differentiated
        raise second.not_differentiable(names[0], exc) from None
    second.merge(report, sub, kp)


def _validated(kernel, inputs, against, repeats) -> tuple:
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    if not callable(kernel) or not callable(against):
        raise TypeError("check: the kernel and against= must be callables taking the kernel's "
                        "inputs")
    if not any(isinstance(x, torch.Tensor) for x in inputs):
        raise ValueError("check(against=...): kernels are judged on torch tensors; pass the "
                         "kernel's inputs as torch tensors on its device")
    if not any((device.floating(x) or complexes.has_complex((x,))) and x.requires_grad
               for x in inputs):
        raise ValueError("check(against=...): no floating input requires grad, so there is "
                         "nothing to judge; call .requires_grad_() on the inputs to check")
    if not isinstance(repeats, int) or isinstance(repeats, bool) or repeats < 1:
        raise ValueError(f"check: repeats must be an integer >= 1, not {repeats!r}")
    return inputs


def _reference_first(ref, inputs, ref_name, name, budget) -> tuple:
    """The reference's own precise check in float64 on the CPU: ``(None, judged)``
    when it passes, ``judged`` being where it failed and its one-sided derivatives
    cleared it (``kinks.between_sides``; ``None`` when it passed outright), else
    ``(its report, named as the reference's, None)``."""
    cpu64 = device.cast(inputs, torch.float64, torch.device("cpu"))
    try:
        outputs = device.run(ref, cpu64)
    except Exception as exc:  # noqa: BLE001 - any failure of the reference is the user's to fix
        raise ValueError(f"the reference {ref_name} fails in float64: {type(exc).__name__}: "
                         f"{verdicts.one_line(exc)}; against= takes a function of ordinary ops that "
                         "runs in float64 with the kernel's arguments") from None
    if not any(device.floating(y) and y.requires_grad for y in outputs):
        raise ValueError(f"the reference {ref_name} is not differentiable: none of its float64 "
                         "outputs requires grad (a .detach(), .item() or no_grad inside it?); "
                         "write it of differentiable torch ops")
    try:
        report = run_check(ref, cpu64, Options(precise=True, name=ref_name, memory_budget=budget))
    except UncheckableError as exc:
        raise ValueError(f"the reference {ref_name} is not differentiable in float64 "
                         f"({verdicts.one_line(exc)}); write it of differentiable torch ops") from None
    except GradcheckError as exc:
        raise ValueError(f"the reference {ref_name} fails in float64: {verdicts.one_line(exc)}; "
                         "against= takes a function of ordinary ops that runs in float64 "
                         "with the kernel's arguments") from None
    if report.passed:
        return None, None
    kink_at = kinks.between_sides(ref, cpu64, report, budget)
    if kink_at is not None:
        return None, kink_at
    report.name = f"{ref_name} (the reference of {name})"
    for result in report.failures:
        note = ("the reference's own derivatives are wrong in float64, not the kernel's: "
                "fix the reference; the kernel was not judged")
        result.detail = note if result.detail is None else f"{note}\n  {result.detail}"
    report.coverage["kernel"] = ["the reference failed its own check; the kernel was not "
                                 "judged"]
    report.settings["reference_failed"] = True
    return report, None


#: whole blocks held at once per entry: the expected, the kernel's runs, the
#: forward mode's, the two computations' measured rounding and allowances
HELD = 8


def _within_budget(kp: Problem, name: str, repeats: int, budget: int) -> None:
    """Every block is compared whole: refused, naming the budget, beyond it."""
    entries = sum(kp.outputs[o].numel() * kp.inputs[i].numel()
                  for o in kp.diff_out for i in kp.diff_in)
    if entries * 8 * (HELD + repeats) > budget:
        raise UncheckableError(
            f"{name}: its Jacobian has {entries:,} entries, held whole {HELD + repeats} times "
            f"in a kernel check, beyond the memory budget of {budget / 2**20:.0f} MiB; check "
            "it at smaller inputs (a kernel's formula does not depend on their size), or "
            "raise memory_budget=")


def _kernel_problem(kernel, inputs, name) -> Problem:
    try:
        return Problem(kernel, inputs, name, warn_precision=False)
    except GradcheckError as exc:
        if any(device.floating(x) and x.dtype == torch.float64 for x in inputs):
            raise GradcheckError(f"{verdicts.one_line(exc)}; a kernel that runs in low precision only "
                                 "may refuse float64: pass its inputs in the dtype it runs in "
                                 "(bfloat16, float16, float32); the reference runs in float64 "
                                 "by itself") from exc.__cause__
        raise


def _match(kp: Problem, expected_out: tuple, name: str, ref_name: str) -> None:
    """The reference's float64 outputs must be the kernel's: in number, shape,
    and kind (floating or not), and differentiable where the kernel's are."""
    if len(expected_out) != len(kp.outputs):
        raise ValueError(f"{ref_name} returns {len(expected_out)} output(s) and {name} "
                         f"{len(kp.outputs)}: the reference must return what the kernel returns")
    for o, (mine, theirs) in enumerate(zip(kp.outputs, expected_out)):
        if device.floating(mine) != device.floating(theirs):
            raise ValueError(f"output {o}: {name} returns {_kind(mine)} and {ref_name} "
                             f"{_kind(theirs)}: the reference must return the same kinds")
        if device.floating(mine) and tuple(mine.shape) != tuple(theirs.shape):
            raise ValueError(f"output {o}: {name} returns shape {tuple(mine.shape)} and "
                             f"{ref_name} {tuple(theirs.shape)}: the reference must return "
                             "the same shapes")
        if o in kp.diff_out and not theirs.requires_grad:
            raise ValueError(f"output {o} of {ref_name} does not depend differentiably on the "
                             "inputs: the reference must be differentiable where the kernel is")


def _kind(x) -> str:
    return f"a {x.dtype} tensor" if isinstance(x, torch.Tensor) else type(x).__name__


def _dtypes(kp: Problem) -> tuple:
    """``(notes, the dtype of the outputs, the dtype of the gradients)``: the
    least precise of each."""
    grads = max((kp.inputs[i].dtype for i in kp.diff_in), key=rounding.epsilon_of)
    outs = max((getattr(torch, kp.output_dtype(o)) for o in kp.float_out),
               key=rounding.epsilon_of)
    notes = [f"output {o} holds only {dtype} numbers, as when the kernel computes in {dtype} "
             f"inside: judged in {dtype}" for o, dtype in sorted(kp.computed_in.items())]
    if outs != grads and not notes:
        notes.append(f"the kernel returns {_name(outs)} from {_name(grads)} inputs: its values "
                     f"are judged in {_name(outs)}, its gradients in {_name(grads)}")
    return notes, outs, grads


def _name(dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _judge(report, kernel, inputs, kp, expected, expected_out, measured, how, notes) -> None:
    """Every comparison of the kernel's runs with the reference's values."""
    dtype, grad_dtype, budget, repeats, forward_ad, widen, curvature, extras = how
    out_eps = rounding.epsilon_of(dtype)
    jac_eps = max(out_eps, rounding.epsilon_of(grad_dtype))
    values, reverse = [], []
    for _ in range(repeats):
        fresh = _fresh(inputs)
        outs = device.run(kernel, fresh)
        values.append({o: device.values(outs[o]) for o in kp.float_out})
        reverse.append(device.reverse_blocks(outs, fresh, kp.diff_in, kp.diff_out, budget))
    wanted = {o: device.values(expected_out[o]) for o in kp.float_out}
    ways = {way: ({o: rounding.forward_allowance(wanted[o], out_eps, m.forward.get(o))
                   for o in kp.float_out},
                  _plus(rounding.jacobian_allowance(expected, jac_eps, m, curvature),
                        extras.get(way, {})))
            for way, m in measured.items()}
    notes += [m.note for m in measured.values() if m.note]
    loosest = list(ways.values())[-1]    # nondeterminism is a spread beyond any rounding
    found, odd, value_gap = verdicts.spread(values, loosest[0], "kernel")
    report.results += odd
    blocks, odd, block_gap = verdicts.spread(reverse, loosest[1], "reverse")
    report.results += odd
    if repeats > 1 and not odd:
        notes.append(f"{repeats} runs compared: their spread, within rounding, widens the "
                     "allowance")
    for o in kp.float_out:
        report.results.append(_first_passing(
            lambda tol: verdicts.value_result(o, wanted[o], found[o], tol, _name(dtype)),
            {way: v[o] + value_gap[o] for way, (v, _) in ways.items()}))
    sides = {"reverse": blocks}
    if forward_ad:
        try:
            sides["forward"] = device.forward_blocks(kernel, _fresh(inputs), kp.diff_in,
                                                     kp.diff_out)
        except Exception as exc:  # noqa: BLE001 - no jvp: forward mode is not judged
            notes.append(f"the kernel defines no jvp ({type(exc).__name__}: "
                         f"{verdicts.one_line(exc)[:120]}): forward mode not judged")
    for mode, made in sides.items():
        report.jacobians[mode] = Jacobian(mode, expected.layout, made)
        for key in sorted(made):
            report.results.append(_first_passing(
                lambda tol: verdicts.block_result(mode, key, expected.blocks[key], made[key],
                                                  tol, _name(grad_dtype), widen.get(key)),
                {way: b[key] + block_gap[key] + widen.get(key, 0.0)
                 for way, (_, b) in ways.items()}))
    report.counts = {"kernel runs": repeats + (1 if "forward" in sides else 0)}


def _plus(tolerances: dict, more: dict) -> dict:
    return {key: t + more[key] if key in more else t for key, t in tolerances.items()}


def _first_passing(judge, tolerances: dict):
    """The comparison under the tightest computation's allowance that passes
    (``rounding.computations``, tightest first), or the loosest's failure; a
    pass beyond the tightest says which rounding it needed."""
    result = None
    for way, tolerance in tolerances.items():
        result = judge(tolerance)
        if result.passed:
            if way != next(iter(tolerances)):
                result.detail = (f"within the rounding of the reference run {way}, not of "
                                 "one fused computation: its resolution applies")
            return result
    return result


def _fresh(inputs: tuple) -> tuple:
    """New leaves holding the inputs' values (same dtype and device)."""
    return tuple(x.detach().clone().requires_grad_(x.requires_grad) if device.floating(x)
                 else x for x in inputs)
