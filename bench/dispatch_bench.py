"""Per-call overhead of refengine on tiny arrays, against raw NumPy.

Run: python bench/dispatch_bench.py [--repeat N] [--budget SECONDS] [--only NAME,...]
                                    [--no-gradcheck] [--cpu]

gradcheck on refengine runs many ops on arrays of a few elements, so what costs is
the Python around each NumPy call, not the arithmetic. Each row times one
small workload on 5x5 float64 arrays and the same computation done directly
in NumPy in the same run (the anchor), and prints refengine's time per call
and the ratio to the anchor. Times are per call, from timeit-style repeats:
the minimum (the least disturbed run) and the median. The gradcheck rows have
no NumPy anchor; when torch is installed they are quoted against
torch.autograd.gradcheck instead. ``--cpu`` times with the process's CPU
time instead of the wall clock, steadier on a loaded machine. This is a
benchmark, not a test: nothing here asserts.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
import timeit
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import adcheck.refengine as E
from adcheck.refengine.autograd import forward_ad as fwAD


def _arrays():
    rng = np.random.default_rng(0)
    return rng.uniform(-1, 1, (5, 5)), rng.uniform(-1, 1, (5, 5)), rng.uniform(-1, 1, 5)


def workloads():
    """(name, refengine callable, NumPy anchor callable), all on 5x5 float64."""
    a, b, r = _arrays()
    x, row = E.from_numpy(a.copy()), E.from_numpy(r.copy())
    xg = E.from_numpy(a.copy()).requires_grad_()
    yg = E.from_numpy(b.copy()).requires_grad_()
    buf, nbuf = E.from_numpy(a.copy()), a.copy()
    tangent = E.from_numpy(b.copy())

    def np_backward():
        s = np.sin(a)
        (s * b).sum()
        return np.cos(a) * b, s.copy()

    def re_backward():
        xg.grad = yg.grad = None
        (xg.sin() * yg).sum().backward()

    def np_double():
        # the first-order graph, then the ops create_graph records in the vjp
        s = np.sin(a)
        (s * b).sum()
        g = np.ones(()) * b
        return g * np.cos(a)

    def re_double():
        return E.autograd.grad((xg.sin() * yg).sum(), xg, create_graph=True)

    def np_forward_mode():
        return np.sin(a), np.cos(a) * b

    def re_forward_mode():
        with fwAD.dual_level():
            d = fwAD.make_dual(x, tangent)
            return fwAD.unpack_dual(d.sin())

    return [
        ("sin(x)", lambda: E.sin(x), lambda: np.sin(a)),
        ("sin(x) requires_grad", lambda: E.sin(xg), lambda: np.sin(a)),
        ("x * row (broadcast)", lambda: x * row, lambda: a * r),
        ("x + 2.0 (number)", lambda: x + 2.0, lambda: a + 2.0),
        ("x.sum(dim=1)", lambda: x.sum(dim=1), lambda: a.sum(axis=1)),
        ("x.transpose(0, 1)", lambda: x.transpose(0, 1), lambda: a.transpose(1, 0)),
        ("x[1:3]", lambda: x[1:3], lambda: a[1:3]),
        ("x.exp() (method)", lambda: x.exp(), lambda: np.exp(a)),
        ("buf.mul_(1.0)", lambda: buf.mul_(1.0), lambda: np.multiply(nbuf, 1.0, out=nbuf)),
        ("(x.sin()*y).sum().backward()", re_backward, np_backward),
        ("grad(create_graph=True)", re_double, np_double),
        ("dual: make/sin/unpack", re_forward_mode, np_forward_mode),
    ]


TIMER = [time.perf_counter]


def per_call(fn, repeat: int, budget: float) -> tuple[float, float]:
    """(min, median) seconds per call over ``repeat`` timed runs."""
    timer = timeit.Timer(fn, timer=TIMER[0])
    number, elapsed = timer.autorange()
    # autorange aims at 0.2 s per run; scale the loop to the time budget
    number = max(1, int(number * budget / max(elapsed, 1e-9) / repeat))
    runs = [t / number for t in timer.repeat(repeat=repeat, number=number)]
    return min(runs), statistics.median(runs)


def gradcheck_workloads():
    """(name, refengine run, torch run or None) for whole gradcheck calls."""
    from adcheck import gradcheck
    a = np.random.default_rng(1).uniform(-1, 1, (5, 5))
    x = E.from_numpy(a.copy()).requires_grad_()
    rows = [("gradcheck(sin, fwd)", lambda: gradcheck.gradcheck(E.sin, (x,), check_forward_ad=True)),
            ("gradgradcheck(sin)", lambda: gradcheck.gradgradcheck(E.sin, (x,)))]
    try:
        import torch
    except ImportError:
        return [(name, run, None) for name, run in rows]
    tx = torch.from_numpy(a.copy()).requires_grad_()
    theirs = [lambda: torch.autograd.gradcheck(torch.sin, (tx,), check_forward_ad=True),
              lambda: torch.autograd.gradgradcheck(torch.sin, (tx,))]
    return [(name, run, anchor) for (name, run), anchor in zip(rows, theirs)]


def _row(name: str, mine: tuple, anchor: tuple | None, unit: float, label: str) -> str:
    text = f"{name:30} {mine[0] / unit:10.2f} {mine[1] / unit:10.2f}"
    if anchor is None:
        return text
    return (f"{text} {anchor[0] / unit:10.2f} {mine[0] / anchor[0]:8.2f}x "
            f"{mine[1] / anchor[1]:8.2f}x  {label}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--budget", type=float, default=0.5, help="seconds per workload")
    parser.add_argument("--only", default="", help="comma-separated name prefixes")
    parser.add_argument("--no-gradcheck", action="store_true")
    parser.add_argument("--cpu", action="store_true", help="time CPU, not wall clock")
    args = parser.parse_args(argv)
    if args.cpu:
        TIMER[0] = time.process_time
    wanted = [w for w in args.only.split(",") if w]
    keep = (lambda name: any(name.startswith(w) for w in wanted)) if wanted else (lambda name: True)
    warnings.simplefilter("ignore")
    print(f"{'workload (5x5 float64)':30} {'min us':>10} {'median us':>10} {'numpy us':>10} "
          f"{'min ratio':>9} {'med ratio':>9}")
    for name, mine, anchor in workloads():
        if keep(name):
            print(_row(name, per_call(mine, args.repeat, args.budget),
                       per_call(anchor, args.repeat, args.budget), 1e-6, ""), flush=True)
    if args.no_gradcheck:
        return
    print(f"\n{'whole checks':30} {'min ms':>10} {'median ms':>10} {'torch ms':>10} "
          f"{'min ratio':>9} {'med ratio':>9}")
    for name, mine, anchor in gradcheck_workloads():
        if keep(name):
            ours = per_call(mine, args.repeat, args.budget * 4)
            theirs = per_call(anchor, args.repeat, args.budget * 4) if anchor else None
            print(_row(name, ours, theirs, 1e-3, "vs torch"), flush=True)


if __name__ == "__main__":
    main()
