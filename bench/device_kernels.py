"""The kernel zoo of issue 32 on an accelerator (``bench/device.md``).

Runs every kernel of ``bench/kernels_zoo.py`` in bfloat16, float16 and
float32 with its inputs on ``DEVICE`` (default ``cuda``; any torch device:
``python bench/device_kernels.py mps``), judged by
``gradcheck.kernels.check`` against its reference, and prints one markdown
row per kernel and dtype: the verdict, the resolution stated for the block
where the bug is largest, where the float64 reference ran, and the seconds.
Without the device it prints one line saying so and exits 0.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernels import DTYPES, bug_sizes, verdict  # noqa: E402
from kernels_zoo import ZOO  # noqa: E402

from adcheck.gradcheck import kernels  # noqa: E402
from adcheck.gradcheck.kernels import verdicts  # noqa: E402


def _available(name: str) -> bool:
    try:
        torch.zeros(1, device=name)
    except (RuntimeError, AssertionError, TypeError):
        return False
    return True


def main(name: str) -> None:
    if not _available(name):
        print(f"no {name} device here: nothing measured (the CPU table is bench/kernels.md)")
        return
    print("| kernel | bug | dtype | adcheck | resolution | reference ran on | s |")
    print("|---|---|---|---|---|---|---|")
    for case in ZOO:
        for dtype in DTYPES:
            inputs = tuple(x.detach().to(name).requires_grad_() for x in
                           case.inputs(dtype, torch.Generator().manual_seed(0)))
            start = time.perf_counter()
            report = kernels.check(case.kernel, inputs, against=case.reference,
                                   order=case.order)
            seconds = time.perf_counter() - start
            sizes = bug_sizes(case, tuple(x.cpu() for x in inputs), report)
            best = max(((sizes.get((verdicts.name_of(r), r.out_idx, r.in_idx), 0.0) /
                         r.precision.resolution, r.precision.resolution)
                        for r in report.results if r.precision and r.precision.resolution))
            row = {"passed": report.passed, "above": best[0] > 1}
            cpu = any("ran on the CPU" in n for n in report.coverage.get("kernel", []))
            print(f"| {case.name} | {case.bug or 'correct'} | "
                  f"{str(dtype).removeprefix('torch.')} | {verdict(case, row)} | {best[1]:.1e} "
                  f"| {'cpu' if cpu else name} | {seconds:.1f} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "cuda")
