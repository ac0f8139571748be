"""Evaluations and wall time per check kind on a fixed op list.

Run: python bench/gradcheck_bench.py [--engine torch|refengine] [--repeat N] [--json]
     python bench/gradcheck_bench.py --escape [--trials N]

For each op and each check kind (slow reverse, slow reverse+forward, fast,
fast+forward, precise, gradgrad) it prints the function, vjp and jvp counts
of one run and the best wall time of N runs; with torch, the wall time of
torch.autograd.gradcheck with the same options as a baseline. This is a
benchmark, not a test: nothing here asserts.
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adcheck.gradcheck import check

KINDS = {
    "slow": dict(),
    "slow+fwd": dict(check_forward_ad=True),
    "fast": dict(fast_mode=True),
    "fast+fwd": dict(fast_mode=True, check_forward_ad=True),
    "precise": dict(precise=True),
    "gradgrad": dict(order=2),
}
TORCH_KINDS = {"slow": dict(), "slow+fwd": dict(check_forward_ad=True),
               "fast": dict(fast_mode=True), "fast+fwd": dict(fast_mode=True, check_forward_ad=True)}


def ops(E):
    """(name, function, inputs) on engine module ``E``, fixed seeds."""
    rng = np.random.default_rng(0)

    def t(*shape, complex_=False, low=-1.0):
        a = rng.uniform(low, 1.0, shape)
        if complex_:
            a = a + 1j * rng.uniform(-1, 1, shape)
        return E.from_numpy(a).requires_grad_()
    return [
        ("sin[16]", E.sin, (t(16),)),
        ("exp[4x4]", E.exp, (t(4, 4),)),
        ("mul[8]x[8]", E.mul, (t(8), t(8))),
        ("matmul[4x5]@[5x3]", E.matmul, (t(4, 5), t(5, 3))),
        ("sum(dim=1)[6x6]", lambda x: x.sum(1), (t(6, 6),)),
        ("complex exp[8]", E.exp, (t(8, complex_=True),)),
        ("complex mul[6]x[6]", E.mul, (t(6, complex_=True), t(6, complex_=True))),
    ]


def best_time(fn, repeat):
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def run(engine: str, repeat: int):
    E = importlib.import_module("adcheck.refengine" if engine == "refengine" else engine)
    rows = []
    for name, fn, inputs in ops(E):
        for kind, options in KINDS.items():
            try:
                report = check(fn, inputs, seed=0, **options)
                seconds = best_time(lambda: check(fn, inputs, seed=0, **options), repeat)
                row = dict(op=name, kind=kind, passed=report.passed, seconds=seconds,
                           **{k: report.counts.get(k, 0) for k in ("function", "vjp", "jvp")})
            except Exception as exc:  # a benchmark reports, it does not stop
                row = dict(op=name, kind=kind, error=f"{type(exc).__name__}: {exc}"[:120])
            if engine == "torch" and kind in TORCH_KINDS:
                import torch
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    row["torch_seconds"] = best_time(
                        lambda: torch.autograd.gradcheck(fn, inputs, **TORCH_KINDS[kind]), repeat)
            rows.append(row)
    return rows


def render(rows):
    header = f"{'op':22} {'kind':9} {'ok':3} {'func':>5} {'vjp':>5} {'jvp':>5} {'ms':>8} {'torch ms':>9}"
    print(header)
    print("-" * len(header))
    for r in rows:
        if "error" in r:
            print(f"{r['op']:22} {r['kind']:9} ERR {r['error']}")
            continue
        torch_ms = f"{1e3 * r['torch_seconds']:9.2f}" if "torch_seconds" in r else " " * 9
        print(f"{r['op']:22} {r['kind']:9} {'yes' if r['passed'] else 'NO':3} {r['function']:5d} "
              f"{r['vjp']:5d} {r['jvp']:5d} {1e3 * r['seconds']:8.2f} {torch_ms}")


def one_entry_bug(size: float):
    """A torch Function: x * w elementwise over 36 entries, one vjp entry off by ``size``."""
    import torch

    class OneEntry(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            grad = 2 * g
            return grad + torch.nn.functional.one_hot(torch.tensor(7), 36).double() * size * g[7]
    return OneEntry.apply


def escape_rates(trials: int):
    """How often fast mode misses a single-entry error, ours (k probes) and torch's."""
    import torch
    x = torch.linspace(-1, 1, 36, dtype=torch.float64).requires_grad_()
    print("fraction of runs that miss the error (fast mode, k probes); torch fast and slow mode")
    print(f"{'error':>8} {'k=1':>6} {'k=2':>6} {'k=4':>6} {'torch fast':>10} {'slow':>6}")
    for size in (1e-4, 1e-3, 1e-2, 1e-1):
        f = one_entry_bug(size)
        rates = [np.mean([check(f, (x,), fast_mode=True, probes=k).passed for _ in range(trials)])
                 for k in (1, 2, 4)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = torch.autograd.gradcheck(f, (x,), fast_mode=True, raise_exception=False)
        slow = check(f, (x,)).passed
        print(f"{size:8.0e} {rates[0]:6.2f} {rates[1]:6.2f} {rates[2]:6.2f} "
              f"{'missed' if theirs else 'caught':>10} {'missed' if slow else 'caught':>5}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", default="torch", choices=["torch", "refengine"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--escape", action="store_true",
                        help="fraction of fast-mode runs that miss a single-entry error")
    parser.add_argument("--trials", type=int, default=200)
    args = parser.parse_args(argv)
    if args.escape:
        escape_rates(args.trials)
        return
    rows = run(args.engine, args.repeat)
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        render(rows)


if __name__ == "__main__":
    main()
