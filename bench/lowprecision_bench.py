"""Low precision: does the stated resolution agree with what a check catches?

``check(precise=True)`` on float32, bfloat16 or float16 inputs states, per
result, the smallest relative formula error it can detect (``Result.precision``,
see ``gradcheck.lowprec.lowprecision``). Two measurements test that statement:

``measure`` plants errors of decreasing size: each op below is wrapped in a
``torch.autograd.Function`` whose backward (reverse mode) or jvp (forward
mode) is the op's own, times ``1 + rho``. For each op, dtype (float32 against
float64, float32 differenced in float32, bfloat16, float16) and mode it
bisects, on a log scale, the smallest ``rho`` the check catches, and prints
it next to the resolution the check of the correct formula stated. A
measured/stated ratio near 1 means the statement is right; below 1 it is
pessimistic (the check sees more than it claims), above 1 it claims too much.

``calibrate`` repeats the measurement behind ``lowprecision.MARGIN``: over
the registry's samples it compares the actual rounding error of the
low-precision AD Jacobian (against float64 AD at the same values) with the
allowance computed with ``MARGIN = 1``, and prints the largest ratios.

    python bench/lowprecision_bench.py measure [--ops sin,softmax] [--quick]
    python bench/lowprecision_bench.py calibrate [--engine torch] [--dtypes bfloat16]
"""
from __future__ import annotations

import argparse
import math
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

import torch  # noqa: E402

from adcheck import gradcheck  # noqa: E402

RNG = np.random.default_rng(17)
W = torch.from_numpy(RNG.uniform(-1, 1, (4, 3)))

#: name -> (function of one tensor, input values)
OPS = {
    "sin": (torch.sin, RNG.uniform(-2, 2, 5)),
    "exp": (torch.exp, RNG.uniform(-2, 2, 5)),
    "tanh": (torch.tanh, RNG.uniform(-2, 2, 5)),
    "sigmoid": (torch.sigmoid, RNG.uniform(-3, 3, 5)),
    "softmax": (lambda x: torch.softmax(x, -1), RNG.uniform(-2, 2, (2, 4))),
    "logsumexp": (lambda x: torch.logsumexp(x, -1), RNG.uniform(-2, 2, (2, 4))),
    "matmul": (lambda x: x @ W.to(x.dtype), RNG.uniform(-1, 1, (2, 4))),
    "inv": (torch.linalg.inv, np.eye(3) + RNG.uniform(-0.3, 0.3, (3, 3))),
}

#: label -> (torch dtype, low_precision keyword)
PATHS = {"float32": (torch.float32, "auto"), "float32 in float32": (torch.float32, "dtype"),
         "bfloat16": (torch.bfloat16, "auto"), "float16": (torch.float16, "auto")}


def planted(f, rho: float, mode: str):
    """``f`` with its vjp (``mode="reverse"``) or jvp (``"forward"``) times ``1 + rho``."""
    back = 1 + rho if mode == "reverse" else 1.0
    tangent = 1 + rho if mode == "forward" else 1.0

    class Planted(torch.autograd.Function):
        @staticmethod
        def forward(x):
            return f(x)

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])
            ctx.save_for_forward(inputs[0])

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            with torch.enable_grad():
                leaf = x.detach().requires_grad_()
                (vjp,) = torch.autograd.grad(f(leaf), leaf, grad)
            return vjp * back

        @staticmethod
        def jvp(ctx, t):
            # J t by reverse mode twice (forward AD cannot nest inside a jvp)
            (x,) = ctx.saved_tensors
            with torch.enable_grad():
                leaf = x.detach().requires_grad_()
                y = f(leaf)
                v = torch.zeros_like(y, requires_grad=True)
                (vjp,) = torch.autograd.grad(y, leaf, v, create_graph=True)
                (jt,) = torch.autograd.grad(vjp, v, t.detach())
            return jt * tangent

    return Planted.apply


def run(op: str, path: str, mode: str, rho: float):
    f, values = OPS[op]
    dtype, low = PATHS[path]
    x = torch.tensor(values, dtype=dtype, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return gradcheck.check(planted(f, rho, mode), (x,), precise=True, seed=0,
                               check_forward_ad=True, check_backward_ad=mode == "reverse",
                               low_precision=low)


def caught(op, path, mode, rho) -> bool:
    return mode in {r.check for r in run(op, path, mode, rho).failures}


def smallest_caught(op, path, mode, steps: int) -> float:
    """Bisection on ``log10(rho)`` in [-9, 0.5] for the smallest ``rho`` caught."""
    low, high = -9.0, 0.5
    if not caught(op, path, mode, 10 ** high):
        return math.inf
    for _ in range(steps):
        middle = (low + high) / 2
        if caught(op, path, mode, 10 ** middle):
            high = middle
        else:
            low = middle
    return 10 ** high


def measure(args) -> None:
    ops = args.ops.split(",") if args.ops else list(OPS)
    print(f"{'op':10} {'dtype':19} {'mode':8} {'stated':>9} {'measured':>9} {'ratio':>6}")
    ratios = []
    for op in ops:
        for path in PATHS:
            for mode in ("reverse", "forward"):
                try:
                    report = run(op, path, mode, 0.0)
                except gradcheck.GradcheckError as exc:  # torch has no kernel in this dtype
                    why = str(exc).split(" (", 1)[-1].split(") while")[0]
                    print(f"{op:10} {path:19} {mode:8} not run: {why}")
                    continue
                [result] = [r for r in report.results if r.check == mode]
                stated = result.precision.resolution if result.precision else None
                if not report.passed or stated is None:
                    print(f"{op:10} {path:19} {mode:8} correct formula: "
                          f"{'failed' if not report.passed else 'no statement'}")
                    continue
                found = smallest_caught(op, path, mode, 6 if args.quick else 12)
                ratios.append(found / stated)
                print(f"{op:10} {path:19} {mode:8} {stated:9.2e} {found:9.2e} "
                      f"{found / stated:6.2f}")
    if ratios:
        print(f"measured/stated: median {np.median(ratios):.2f}, "
              f"range {min(ratios):.2f} to {max(ratios):.2f}, over {len(ratios)} cases")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    m = sub.add_parser("measure", help="plant errors, compare the smallest caught with the "
                                       "stated resolution")
    m.add_argument("--ops", help="comma-separated, from: " + ", ".join(OPS))
    m.add_argument("--quick", action="store_true", help="6 bisection steps instead of 12")
    c = sub.add_parser("calibrate", help="actual rounding error over the allowance at MARGIN=1")
    c.add_argument("--engine", default="torch", choices=("torch", "refengine"))
    c.add_argument("--dtypes", default="float32,bfloat16,float16")
    c.add_argument("--samples", type=int, default=99, help="samples per op and dtype")
    c.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    if args.command == "measure":
        measure(args)
    else:
        from lowprecision_calibration import calibrate
        calibrate(args)


if __name__ == "__main__":
    main()
