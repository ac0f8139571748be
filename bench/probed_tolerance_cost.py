"""What the measured AD floor costs (``verdict.adfloor``): nothing on a check
that passes, three pairs of the AD side's Jacobian (or cells) at moved inputs
on a check that fails.

    python bench/probed_tolerance_cost.py [N]

Times ``check(precise=True)`` of ``C x`` (``N`` inputs, refengine) whose vjp
carries rounding-like noise (tests/gradcheck/test_ad_rounding_floor.py's
function): as it runs (the failure measured and excused), with the floor
turned off (the failure stands, nothing measured), and the same function
without noise (passes: nothing measured). The smallest of 3 runs each, in
the same process, with the ratio to the passing check.
"""
from __future__ import annotations

import math
import sys
import time

import numpy as np

import adcheck.refengine as E
from adcheck.gradcheck import check
from adcheck.gradcheck.verdict import adfloor

C = 3.0
ALLOWANCE = math.sqrt(2.0 ** -52) / 2 + 4096 * 2.0 ** -52


def noisy(amplitude: float):
    class Noisy(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return C * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * (C + amplitude * C * E.sin(x * 2.0 ** 50))
    return Noisy.apply


def timed(func, n: int) -> tuple:
    x = E.from_numpy(np.random.default_rng(3).uniform(0.5, 1.5, n)).requires_grad_()
    best, report = math.inf, None
    for _ in range(3):
        start = time.perf_counter()
        report = check(func, (x,), precise=True, check_scaling=False, seed=0)
        best = min(best, time.perf_counter() - start)
    return best, report.passed


def main(n: int) -> None:
    base, passed = timed(noisy(0.0), n)
    rows = [("passes (no noise): nothing measured", base, passed)]
    rows.append(("fails, floor measured, excused", *timed(noisy(2.5 * ALLOWANCE), n)))
    measured = adfloor.moved_evaluators
    adfloor.moved_evaluators = lambda ev: []
    try:
        rows.append(("fails, floor off", *timed(noisy(2.5 * ALLOWANCE), n)))
    finally:
        adfloor.moved_evaluators = measured
    print(f"N = {n}\n| check | seconds | passed | / passing check |\n|---|---|---|---|")
    for name, seconds, ok in rows:
        print(f"| {name} | {seconds:.3f} | {ok} | {seconds / base:.2f} |")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
