"""What confirming a failure at smaller steps costs (``verdict.confirm``).

    python bench/confirm_cost.py            # 5 rounds, CPU time, medians
    python bench/confirm_cost.py --rounds 9

Only a failed precise comparison is confirmed, so a passing check costs
nothing more (its path never reaches the step: the ``adcheck ops`` sweep,
whose checks all pass, runs no confirmation). A failing one pays 28
evaluations per failing column, in batches. Times, with the step and with it
replaced by a no-op in the same process, the failing checks of wrong
formulas on refengine of growing size (every column fails) and of a right
one that failed before (the quadrature of tests/gradcheck/test_confirmed_quadrature.py,
where the confirmation spares the dense window that explained the failure).
bench/confirm_cost.md quotes runs.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from adcheck import refengine as E
from adcheck.gradcheck import check
import adcheck.gradcheck.flow as flow


def _wrong_sin(n: int):
    """``sin`` with its vjp 1e-6 too large: every entry fails."""
    class WrongSin(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return E.sin(x)

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * E.cos(x) * (1 + 1e-6)
    x = E.tensor(np.linspace(0.1, 2.0, n), requires_grad=True)
    return WrongSin.apply, (x,)


def _quadrature():
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "gradcheck"))
    from test_confirmed_quadrature import Integral, _inputs
    return Integral.apply, _inputs()


def _time(func, inputs, rounds: int) -> tuple:
    times, verdicts = [], set()
    for _ in range(rounds):
        start = time.process_time()
        report = check(func, inputs, precise=True, check_inputs_alone=False, seed=0)
        times.append(time.process_time() - start)
        verdicts.add("passed" if report.passed else "failed")
    return statistics.median(times), "/".join(sorted(verdicts))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="timed checks per case (median)")
    args = parser.parse_args(argv)
    cases = [(f"wrong sin, {n} entries", *_wrong_sin(n)) for n in (4, 64, 256)]
    try:
        cases.append(("UNAF quadrature (right)", *_quadrature()))
    except ImportError as exc:   # (torch missing: the refengine cases alone)
        print(f"quadrature case left out: {exc}")
    confirm = flow.confirm
    print(f"{'case':28} {'with':>16} {'without':>16}   ratio")
    for name, func, inputs in cases:
        flow.confirm = confirm
        on, on_verdict = _time(func, inputs, args.rounds)
        flow.confirm = lambda ev, plan, numerical, side, jac, found, eps: (found, False)
        off, off_verdict = _time(func, inputs, args.rounds)
        flow.confirm = confirm
        print(f"{name:28} {on:7.3f} s {on_verdict:6} {off:7.3f} s {off_verdict:6}   "
              f"{on / off:5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
