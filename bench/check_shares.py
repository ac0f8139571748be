"""Where our side of ``bench/vs_torch.py`` spends its time, check by check.

    python bench/check_shares.py                       # 49 ops x 4 modes, 5 rounds
    python bench/check_shares.py --ops add,sub --modes slow --per-op
    python bench/check_shares.py --json shares.json

Each step of a check (``gradcheck.flow`` and ``gradcheck.api._checks``) is
wrapped, for the length of this run only, in a timer that counts the time
spent inside it minus the time of the wrapped steps it calls, so the steps'
times add up to the checks' total; "rest" is what no step claims (option
parsing, the report, the heap). The same ops, inputs and modes as
``vs_torch.py``; nothing is compared with torch here (the ratios are
``vs_torch.py``'s). Timers cost about a microsecond a call: a few percent of
a check of 2 ms. The clock is this process's CPU time by default (``--clock
wall`` for wall time): on a machine others load, wall time counts their turns
on the cores too, CPU time only ours (a check here runs on one thread).

The steps, in the order a check runs them:

- problem: validating the inputs and the first evaluation (``Problem``);
- second order: building the first derivative (gradgrad only);
- determinism: the function twice at the inputs;
- plan: choosing how the Jacobians are built;
- scaling, undefined grad: drawing their vectors (they ride in the Jacobians'
  batches) and judging them;
- expected: the numerical Jacobian (finite differences);
- reverse, forward: the AD Jacobians (fast mode: the projections);
- reentrant: the reverse Jacobian built a second time, and compared;
- compare: each AD Jacobian against the expected one;
- adjoint, detached, nonfinite, mutation, noise: the other checks.
"""
from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from adcheck import gradcheck, refengine  # noqa: E402  (after the path: this checkout)
from adcheck.gradcheck import api, flow  # noqa: E402
from adcheck.gradcheck.core import problem as problem_module  # noqa: E402
from adcheck.gradcheck.core import secondorder  # noqa: E402
from adcheck.gradcheck.verdict import checks, faults, noise  # noqa: E402
from vs_torch_ops import build_ops  # noqa: E402

MODES = {
    "slow": (gradcheck.gradcheck, {}),
    "slow+fwd": (gradcheck.gradcheck, {"check_forward_ad": True}),
    "fast": (gradcheck.gradcheck, {"fast_mode": True}),
    "gradgrad": (gradcheck.gradgradcheck, {}),
}

#: (module, attribute, step): the functions timed, and the step each counts for
STEPS = [
    (problem_module.Problem, "__init__", "problem"),
    (secondorder, "first_derivative", "second order"),
    (faults, "determinism_results", "determinism"),
    (flow, "choose", "plan"),
    (checks, "scaling_probes", "scaling"),
    (checks, "scaling", "scaling"),
    (checks, "request_undefined_grad", "undefined grad"),
    (checks, "undefined_grad", "undefined grad"),
    (flow, "expected_jacobian", "expected"),
    (flow, "fast_numerical", "expected"),
    (flow, "precise_tolerances", "expected"),
    (checks, "reentrant", "reentrant"),
    (flow, "_repeat", "reentrant"),   # (its second run of the backward: untimed, it was "rest")
    (flow, "compare_jacobians", "compare"),
    (flow, "annotate", "compare"),
    (flow, "slow_projections", "adjoint"),
    (flow, "adjoint_results", "adjoint"),
    (flow, "draw_probes", "adjoint"),
    (checks, "detached", "detached"),
    (faults, "nonfinite_results", "nonfinite"),
    (faults, "mutation_results", "mutation"),
    (noise, "noise_only", "noise"),
]


CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


class Timers:
    """Exclusive seconds per step: a step's time less that of the steps it calls."""

    def __init__(self, clock=time.process_time):
        self.clock = clock
        self.seconds = defaultdict(float)
        self.calls = defaultdict(int)
        self._stack: list = []   # per open step: [name, seconds of nested steps]

    def timed(self, step: str, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            self._stack.append([step, 0.0])
            start = self.clock()
            try:
                return fn(*args, **kwargs)
            finally:
                spent = self.clock() - start
                _, nested = self._stack.pop()
                self.seconds[step] += spent - nested
                self.calls[step] += 1
                if self._stack:
                    self._stack[-1][1] += spent
        return wrapper

    def producer(self, make):
        """``ad_producer`` / ``fast_projections``: the first Jacobian of a side counts for
        that side, the reverse side's second (reentrancy) for "reentrant"."""
        timers = self

        @functools.wraps(make)
        def wrapped_make(side, *args, **kwargs):
            produce = make(side, *args, **kwargs)
            made = [0]

            def timed_produce(*a, **k):
                made[0] += 1
                step = "reentrant" if made[0] > 1 else side.mode
                return timers.timed(step, produce)(*a, **k)
            return timed_produce
        return wrapped_make

    def projections(self, fn):
        seen = set()

        @functools.wraps(fn)
        def wrapper(ev, side, probes):
            key = (id(ev), side.mode)
            step = "reentrant" if key in seen else side.mode
            seen.add(key)
            return self.timed(step, fn)(ev, side, probes)
        return wrapper


def install(timers: Timers) -> list:
    """Wrap every step; returns what ``uninstall`` puts back."""
    saved = []
    for owner, attr, step in STEPS:
        original = getattr(owner, attr, None)
        if original is None:   # a step renamed or gone since: the others still count
            continue
        saved.append((owner, attr, original))
        setattr(owner, attr, timers.timed(step, original))
    for owner, attr, wrap in ((flow, "ad_producer", timers.producer),
                              (flow, "fast_projections", timers.projections)):
        original = getattr(owner, attr)
        saved.append((owner, attr, original))
        setattr(owner, attr, wrap(original))
    run = api._run
    saved.append((api, "_run", run))
    setattr(api, "_run", timers.timed("rest", run))
    return saved


def uninstall(saved: list) -> None:
    for owner, attr, original in reversed(saved):
        setattr(owner, attr, original)


def measure(ops, modes, rounds: int, clock=time.process_time) -> dict:
    """Per mode: seconds per step (summed over ops, the least of ``rounds``
    per op and step), and per op the same."""
    out = {}
    for mode in modes:
        check, kwargs = MODES[mode]
        per_op = {}
        for op in ops:
            func, inputs = op.func(refengine), op.inputs(refengine)
            check(func, inputs, raise_exception=False, **kwargs)   # warm: caches, imports
            best = None
            for _ in range(rounds):
                timers = Timers(clock)
                saved = install(timers)
                try:
                    check(func, inputs, raise_exception=False, **kwargs)
                finally:
                    uninstall(saved)
                total = sum(timers.seconds.values())
                if best is None or total < best[0]:
                    best = (total, dict(timers.seconds))
            per_op[op.name] = best[1]
        steps = defaultdict(float)
        for seconds in per_op.values():
            for step, s in seconds.items():
                steps[step] += s
        out[mode] = dict(steps=dict(steps), per_op=per_op)
    return out


ORDER = ["problem", "second order", "determinism", "plan", "scaling", "undefined grad",
         "expected", "reverse", "forward", "reentrant", "compare", "adjoint", "detached",
         "nonfinite", "mutation", "noise", "rest"]


def print_shares(result: dict, per_op: bool = False) -> None:
    """One table: per mode, each step's ms (summed over the ops) and share."""
    modes = list(result)
    print("our side's time by step (ms summed over the ops, least of the rounds per op; "
          "% of the mode's total)")
    print(f"{'step':15}" + "".join(f" | {m:>16}" for m in modes))
    totals = {m: sum(result[m]["steps"].values()) for m in modes}
    for step in ORDER:
        if not any(result[m]["steps"].get(step) for m in modes):
            continue
        cells = []
        for m in modes:
            s = result[m]["steps"].get(step, 0.0)
            cells.append(f" | {1e3 * s:8.1f} {100 * s / totals[m]:5.1f}%" if s else
                         f" | {'-':>16}")
        print(f"{step:15}" + "".join(cells))
    print(f"{'total':15}" + "".join(f" | {1e3 * totals[m]:8.1f} {100.0:5.1f}%" for m in modes))
    if per_op:
        for m in modes:
            print(f"\n{m}: per op, ms (the three largest steps)")
            for name, seconds in result[m]["per_op"].items():
                top = sorted(seconds.items(), key=lambda kv: -kv[1])[:3]
                print(f"  {name:16} {1e3 * sum(seconds.values()):6.2f}  " + ", ".join(
                    f"{k} {1e3 * v:.2f}" for k, v in top))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", default="", help="comma-separated op names (default: all 49)")
    parser.add_argument("--modes", default=",".join(MODES),
                        help=f"comma-separated, from {', '.join(MODES)}")
    parser.add_argument("--rounds", type=int, default=5,
                        help="runs per op and mode; the fastest is kept (default 5)")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu",
                        help="this process's CPU time (default) or wall time")
    parser.add_argument("--per-op", action="store_true", help="also each op's largest steps")
    parser.add_argument("--json", metavar="PATH", help="write the numbers to PATH")
    args = parser.parse_args(argv)
    ops = build_ops(0)
    if args.ops:
        wanted = set(args.ops.split(","))
        ops = [op for op in ops if op.name in wanted]
    modes = [m for m in args.modes.split(",") if m]
    bad = [m for m in modes if m not in MODES]
    if bad or not ops or args.rounds < 1:
        parser.error(f"unknown mode {bad[0]!r}" if bad else
                     "no op matches --ops" if not ops else "--rounds must be at least 1")
    result = measure(ops, modes, args.rounds, CLOCKS[args.clock])
    print_shares(result, args.per_op)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
