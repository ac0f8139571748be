"""Issue 32's measurement: the kernel zoo judged three ways, on the CPU.

For every kernel of ``bench/kernels_zoo.py`` in bfloat16, float16 and float32:

- adcheck: ``gradcheck.kernels.check(kernel, inputs, against=reference)``,
  its verdict, the resolution it states for the block where the bug is
  largest, and its wall time; then the same with ``fused=True`` (the zoo's
  kernels compute in float32 inside, as declared);
- the bug's own size, measured without rounding: the kernel and the
  reference run in float64 (the zoo's kernels compute in float64 when given
  float64), the largest error of each compared block (values, vjp and jvp
  blocks) relative to that block's largest entry; "above" when it exceeds
  the resolution adcheck states for that block;
- ``torch.testing.assert_close`` of the kernel's output and its gradients
  (one random cotangent; for a second-order case also their gradients, a
  second random cotangent) against the reference run in the same dtype, with
  the dtype's default tolerances;
- the "twice the reference's error" rule: the kernel's largest error against
  the float64 reference at most twice the same-precision reference's, for
  the output and each gradient (and second-order gradient).

Run: ``python bench/kernels.py`` (prints the markdown table of
``bench/kernels.md``); ``python bench/kernels.py seeds`` checks every correct
kernel (also with ``fused=True``, and each reference run op by op in the dtype
as a kernel) at five more input draws for false alarms.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernels_zoo import ZOO  # noqa: E402

from adcheck.gradcheck import kernels  # noqa: E402
from adcheck.gradcheck.core.problem import Problem  # noqa: E402
from adcheck.gradcheck.kernels import device, second, verdicts  # noqa: E402

DTYPES = (torch.bfloat16, torch.float16, torch.float32)


def bug_sizes(case, inputs, report) -> dict:
    """By result key ``(comparison, out, in)`` (``verdicts.name_of``): the
    kernel's error in float64 relative to the block's largest entry."""
    wide = device.cast(inputs, torch.float64, torch.device("cpu"))
    sizes = _first_sizes(case, wide, report)
    if case.order == 2:
        sizes.update(_second_sizes(case, wide))
    return sizes


def _second_sizes(case, wide) -> dict:
    """The second order's blocks: the kernel's vjp against the reference's, in
    float64 at the cotangent the check uses (``kernels.second``)."""
    kp = Problem(case.kernel, wide, warn_precision=False)
    (mine, ref), args, _ = second.derivatives((case.kernel, case.reference), wide, kp,
                                              ("kernel", "reference"))
    a_out, e_out = device.run(mine, args), device.run(ref, args)
    outs = list(range(len(e_out)))
    a = device.reverse_blocks(a_out, args, kp.diff_in, outs, 2**28)
    e = device.reverse_blocks(e_out, args, kp.diff_in, outs, 2**28)
    return {("gradgrad", kp.diff_in[k], i): _relative(a[k, i], e[k, i]) for k, i in a}


def _first_sizes(case, wide, report) -> dict:
    mine, ref = device.run(case.kernel, wide), device.run(case.reference, wide)
    diff_in = [i for i, x in enumerate(wide) if x.requires_grad]
    diff_out = list(range(len(ref)))
    sizes = {}
    for o in diff_out:
        sizes["value", o, None] = _relative(device.values(mine[o]), device.values(ref[o]))
    made = {"reverse": (device.reverse_blocks(mine, wide, diff_in, diff_out, 2**28),
                        device.reverse_blocks(ref, wide, diff_in, diff_out, 2**28))}
    if "forward" in report.jacobians:
        made["forward"] = (device.forward_blocks(case.kernel, wide, diff_in, diff_out),
                           made["reverse"][1])
    for mode, (a, e) in made.items():
        for key in a:
            sizes[(mode, *key)] = _relative(a[key], e[key])
    return sizes


def _relative(actual, expected) -> float:
    top = float(np.max(np.abs(expected)))
    return float(np.max(np.abs(actual - expected))) / top if top else 0.0


def adcheck_row(case, inputs, fused=None) -> dict:
    start = time.perf_counter()
    report = kernels.check(case.kernel, inputs, against=case.reference, fused=fused,
                           order=case.order)
    seconds = time.perf_counter() - start
    sizes = bug_sizes(case, inputs, report)
    worst, ratio = None, -1.0
    for r in report.results:
        res = r.precision.resolution if r.precision else None
        size = sizes.get((verdicts.name_of(r), r.out_idx, r.in_idx), 0.0)
        if res and size / res > ratio:
            worst, ratio = (size, res), size / res
    return {"passed": report.passed, "seconds": seconds, "size": worst[0],
            "resolution": worst[1], "above": ratio > 1, "report": report}


def _grads(func, inputs, order=1, cotangent_seed=1):
    """The output and its gradients for one random cotangent; with ``order=2``
    also the gradients of those gradients for a second random cotangent."""
    leaves = tuple(x.detach().clone().requires_grad_(x.requires_grad) for x in inputs)
    out = func(*leaves)
    g = torch.Generator().manual_seed(cotangent_seed)
    cot = torch.randn(out.shape, generator=g).to(out.dtype)
    wrt = [x for x in leaves if x.requires_grad]
    grads = torch.autograd.grad(out, wrt, cot, create_graph=order == 2)
    if order == 1:
        return [out.detach(), *grads]
    cots = [torch.randn(d.shape, generator=g).to(d.dtype) for d in grads]
    seconds = torch.autograd.grad(grads, wrt, cots, allow_unused=True)
    return [out.detach(), *(d.detach() for d in grads),
            *(torch.zeros_like(x) if s is None else s for s, x in zip(seconds, wrt))]


def assert_close_finds(case, inputs) -> bool:
    kernel, ref = _grads(case.kernel, inputs, case.order), _grads(case.reference, inputs,
                                                                   case.order)
    try:
        for a, e in zip(kernel, ref):
            torch.testing.assert_close(a, e)
    except AssertionError:
        return True
    return False


def twice_rule_finds(case, inputs) -> bool:
    wide = tuple(x.detach().double().requires_grad_(x.requires_grad) for x in inputs)
    exact = _grads(case.reference, wide, case.order)
    kernel, ref = _grads(case.kernel, inputs, case.order), _grads(case.reference, inputs,
                                                                   case.order)
    for k, r, e in zip(kernel, ref, exact):
        if float((k.double() - e).abs().max()) > 2 * float((r.double() - e).abs().max()):
            return True
    return False


def verdict(case, row) -> str:
    if case.bug is None:
        return "pass" if row["passed"] else "**FALSE ALARM**"
    if not row["passed"]:
        return "found"
    return "**MISSED**" if row["above"] else "not detectable (below resolution)"


def other(case, finds: bool) -> str:
    if case.bug is None:
        return "**false alarm**" if finds else "pass"
    return "found" if finds else "missed"


def main() -> None:
    print("| kernel | bug | dtype | bug size | resolution | adcheck | s | resolution, fused "
          "declared | adcheck, fused declared | assert_close | 2x rule |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for case in ZOO:
        for dtype in DTYPES:
            inputs = case.inputs(dtype, torch.Generator().manual_seed(0))
            row, declared = adcheck_row(case, inputs), adcheck_row(case, inputs, fused=True)
            name = str(dtype).removeprefix("torch.")
            print(f"| {case.name} | {case.bug or 'correct'} | {name} | {row['size']:.1e} "
                  f"| {row['resolution']:.1e} | {verdict(case, row)} | {row['seconds']:.1f} "
                  f"| {declared['resolution']:.1e} | {verdict(case, declared)} "
                  f"| {other(case, assert_close_finds(case, inputs))} "
                  f"| {other(case, twice_rule_finds(case, inputs))} |", flush=True)


def false_alarms(seeds=range(1, 6)) -> None:
    """Every correct kernel of the zoo (fused) and every reference run in the
    dtype as a kernel (op by op) at five more input draws: adcheck's kernel
    failures (none expected), the references its precise check rejected, the
    slowest check and the resolutions stated, by dtype."""
    print("| dtype | correct checks | kernel false alarms | reference rejected | largest s "
          "| resolutions stated |")
    print("|---|---|---|---|---|---|")
    for dtype in DTYPES:
        runs, alarms, rejected, slowest, stated = 0, [], [], 0.0, []
        for case in (c for c in ZOO if c.bug is None):
            runs_of = [(case.kernel, None), (case.kernel, True), (case.reference, None)]
            for (kernel, fused), seed in [(k, s) for k in runs_of for s in seeds]:
                inputs = case.inputs(dtype, torch.Generator().manual_seed(seed))
                start = time.perf_counter()
                report = kernels.check(kernel, inputs, against=case.reference, fused=fused,
                                       order=case.order)
                slowest = max(slowest, time.perf_counter() - start)
                runs += 1
                stated += [r.precision.resolution for r in report.results
                           if r.precision and r.precision.resolution]
                what = (f"{case.name}{'' if kernel is case.kernel else ' op by op'}"
                        f"{', fused declared' if fused else ''} (seed {seed})")
                if "(the reference of" in report.name:
                    rejected.append(what)
                elif not report.passed:
                    alarms.append(what)
        name = str(dtype).removeprefix("torch.")
        print(f"| {name} | {runs} | {len(alarms)} {', '.join(alarms)} | {len(rejected)} "
              f"{', '.join(rejected)} | {slowest:.1f} | {min(stated):.1e} to {max(stated):.1e} |",
              flush=True)


if __name__ == "__main__":
    # one torch thread: the two cores are shared, and two threads that wait for
    # each other under load made a 60 us forward take 0.26 s (measured)
    torch.set_num_threads(1)
    false_alarms() if sys.argv[1:] == ["seeds"] else main()
