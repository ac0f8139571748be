"""adcheck against torch.autograd.gradcheck: the same ops, inputs and modes, side by side.

Run (from anywhere; the checkout this file is in is the one measured):

    python bench/vs_torch.py                     # 49 ops x 4 modes, 5 repeats
    python bench/vs_torch.py --sweep             # also time `adcheck ops -q` over the registry
    python bench/vs_torch.py --ops 'linalg.*' --ops 'c128.*' --modes slow,gradgrad --repeat 3
    python bench/vs_torch.py --no-batch          # our side with gradcheck.set_batching(False)
    python bench/vs_torch.py --json vs_torch.json --sweep
    python bench/vs_torch.py --list              # the op list, shapes and dtypes
    python bench/vs_torch.py --no-shares         # without the time of our side by step
    python bench/vs_torch.py --clock cpu         # each run in this process's CPU time

What it does, in one process:

- 49 ops at the sizes of the anchor figures (elementwise unary on 5x5, binary
  3x4 with 4 broadcasting, reductions on 4x5, 4x4 linear algebra, conv2d of
  (2,3,6,6) with (4,3,3,3), 8 of them in complex128). Each op is written once
  as a function of an engine module ``E`` (``refengine`` or ``torch``), so
  both sides differentiate the identical formula; its inputs are built once
  in NumPy from a fixed seed (float64 / complex128) and converted to each
  engine's leaf tensors that require grad.
- Four modes: ``slow`` (gradcheck defaults), ``slow+fwd``
  (``check_forward_ad=True``), ``fast`` (``fast_mode=True``) and
  ``gradgrad`` (gradgradcheck defaults). Ours is ``gradcheck.gradcheck`` /
  ``gradcheck.gradgradcheck`` on refengine tensors, theirs
  ``torch.autograd.gradcheck`` / ``gradgradcheck`` on torch tensors.
- Per op and mode: one untimed run per side that records the verdict
  (passed, check failed, or raised) and the warnings, then N timed repeats
  interleaved ours, torch, ours, torch, ...; the median per side is kept.
  Ratios are torch / ours: above 1 means ours is faster.
- Totals per mode count only the ops that ran on both sides without raising.
- torch runs on one intra-op thread by default (``--torch-threads 0`` keeps
  its default of one per core). These tensors are too small for a second
  thread to pay off, and when the machine is busy torch's thread-pool waits
  inflate its times many fold, which would flatter our ratios (measured at a
  load average of 11 on 2 cores: torch's slow mode over the 49 ops took
  0.6 to 1.7 s on one thread, 3.5 to 22 s on two). NumPy's BLAS is left as
  it is. The load average before and after is printed and recorded; compare
  absolute times with the anchors only on an idle machine.
- In subprocesses: ``python -c "import torch"`` (the anchor, best and first of
  3), ``adcheck --help`` (best of 5) and, with ``--sweep``, ``adcheck ops -q``
  over the whole registry (wall time and exit status).

A benchmark prints; it asserts nothing. Every check still really runs, and
every op where a side fails a check, raises, warns unexpectedly, or where the
two sides disagree is listed under "problems", so a fast wrong answer cannot
hide in the totals. Three canaries (custom Functions with a planted error in
the vjp, the jvp, or the second derivative) run once per mode on both sides,
untimed; any verdict other than the expected one is printed as WRONG.

- After the timed loop, our side's time by step of the check (problem,
  determinism, expected Jacobian, reverse, reentrant, scaling, ...), each
  step's share of the mode's total, in this process's CPU time
  (``check_shares.py``; ``--no-shares`` leaves it out).

The op list and canaries are in ``vs_torch_ops.py``, what is printed in
``vs_torch_report.py``, the subprocess timings in ``vs_torch_processes.py``.
"""
from __future__ import annotations

import argparse
import fnmatch
import gc
import importlib
import json
import os
import platform
import re
import statistics
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from adcheck import gradcheck  # noqa: E402  (after the path: measure this checkout)
from adcheck import refengine  # noqa: E402
import check_shares  # noqa: E402
from vs_torch_ops import CANARIES, Op, build_canaries, build_ops  # noqa: E402
from vs_torch_processes import (  # noqa: E402
    load_average,
    time_help,
    time_import_torch,
    time_sweep,
    warn_if_busy,
)
from vs_torch_report import (  # noqa: E402
    ANCHOR_IMPORT_TORCH_S,
    ANCHOR_MS,
    print_batching,
    print_canaries,
    print_problems,
    print_table,
    print_targets,
    print_totals,
    problems,
    slow_per_op,
    targets,
    totals,
)

MODES = {
    # name: (which check, keyword arguments, the same for both sides)
    "slow": ("gradcheck", {}),
    "slow+fwd": ("gradcheck", {"check_forward_ad": True}),
    "fast": ("gradcheck", {"fast_mode": True}),
    "gradgrad": ("gradgradcheck", {}),
}

#: Warnings that are silenced, each with why it is expected. Everything else
#: a check emits is recorded and listed under "problems". The inputs here are
#: all float64 / complex128, so torch's "not a double precision floating point"
#: warning is *not* expected and stays visible (it would mean a bench bug).
EXPECTED_WARNINGS: list[tuple[str, str, str]] = [
    # (side, message regex, reason)
    ("torch", r"DeprecationWarning: `torch\.jit\.script` is deprecated",
     "the first make_dual of a process imports torch._decomp.decompositions_for_jvp, "
     "which registers its decompositions with torch.jit.script (torch 2.13)"),
]

def run_canaries(modes: list[str], sides: dict, seed: int) -> list[dict]:
    rows = []
    for op in build_canaries(seed):
        must_fail = CANARIES[op.name][1]
        for mode in modes:
            kind, kwargs = MODES[mode]
            expected = "failed" if mode in must_fail else "passed"
            row = dict(op=op.name, mode=mode, expected=expected)
            for side, (E, checks) in sides.items():
                verdict, message, _, _ = _call(side, checks[kind], op.func(E), op.inputs(E),
                                               kwargs, True)
                row[side] = verdict
                row[f"{side}_message"] = message
            rows.append(row)
    return rows


# ----- how our side built its Jacobians (batched, looped, fell back) -------


def batching_info(ops: list[Op], modes: list[str]) -> dict | None:
    """From one untimed ``gradcheck.check`` per op and mode, the report's
    ``batching`` entry: where vmap fell back to the loop, and which ops ran
    once per example inside vmap. None when reports have no such entry."""
    out = {}
    for mode in modes:
        kind, kwargs = MODES[mode]
        options = dict(order=2) if kind == "gradgradcheck" else dict(kwargs)
        for op in ops:
            try:
                report = gradcheck.check(op.func(refengine), op.inputs(refengine), seed=0,
                                         **options)
            except Exception as exc:  # noqa: BLE001 - reported with the rest
                out[f"{op.name} {mode}"] = dict(error=f"{type(exc).__name__}: {exc}"[:200])
                continue
            info = getattr(report, "batching", None)
            if info is None:
                return None
            if info.get("fallback") or info.get("looped_ops") or not info.get("batched_calls"):
                out[f"{op.name} {mode}"] = dict(info)
    return out


def check_ops_exist(ops: list[Op], engines) -> list[str]:
    """Names of ops whose formula cannot even be evaluated on an engine."""
    missing = []
    for op in ops:
        for E in engines:
            try:
                with E.no_grad():
                    op.func(E)(*op.inputs(E))
            except Exception as exc:  # noqa: BLE001 - reported, never hidden
                missing.append(f"{op.name} on {E.__name__}: {type(exc).__name__}: {exc}")
    return missing


# ----- running one check and timing the pair (by ``_clock``) ---------------


@dataclass
class Outcome:
    """One side of one (op, mode): its verdict and its times."""
    verdict: str = "passed"       # passed | failed | raised
    message: str = ""
    warnings: list = field(default_factory=list)
    times: list = field(default_factory=list)
    timed_verdicts: list = field(default_factory=list)

    @property
    def median(self):
        return statistics.median(self.times) if self.times else None

    def to_dict(self):
        return dict(verdict=self.verdict, message=self.message, warnings=self.warnings,
                    median_ms=None if self.median is None else 1e3 * self.median,
                    times_ms=[1e3 * t for t in self.times],
                    timed_verdicts=self.timed_verdicts)


def _expected(side: str, message: str) -> bool:
    return any(s == side and re.search(rx, message) for s, rx, _ in EXPECTED_WARNINGS)


def _call(side: str, check: Callable, func, inputs, kwargs, raise_exception: bool):
    """Run one check; returns (verdict, message, unexpected warnings, seconds)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = _clock[0]()
        try:
            ok = check(func, inputs, raise_exception=raise_exception, **kwargs)
            verdict, message = ("passed" if ok else "failed"), ""
        except Exception as exc:  # noqa: BLE001 - a benchmark reports, it does not stop
            failed = isinstance(exc, gradcheck.GradcheckError) or (
                type(exc).__name__ == "GradcheckError")
            verdict = "failed" if failed else "raised"
            message = f"{type(exc).__name__}: {exc}"
        seconds = _clock[0]() - start
    found = []
    for w in caught:
        text = f"{w.category.__name__}: {w.message}"
        if not _expected(side, text) and text not in found:
            found.append(text)
    return verdict, message, found, seconds


def run_pair(op: Op, mode: str, repeat: int, sides: dict) -> dict:
    """Ours and torch's on one op in one mode: a verdict run each, then
    ``repeat`` interleaved timed runs (ours, torch, ours, torch, ...)."""
    kind, kwargs = MODES[mode]
    prepared = {}
    result = {}
    for side, (E, checks) in sides.items():
        func, inputs = op.func(E), op.inputs(E)
        verdict, message, warns, _ = _call(side, checks[kind], func, inputs, kwargs, True)
        result[side] = Outcome(verdict, message, warns)
        if verdict != "raised":   # a side that cannot run the op is not timed
            prepared[side] = (checks[kind], func, inputs)
    for _ in range(repeat):
        for side, (check, func, inputs) in prepared.items():
            verdict, message, warns, seconds = _call(side, check, func, inputs, kwargs, False)
            out = result[side]
            out.times.append(seconds)
            out.timed_verdicts.append(verdict)
            for w in warns:
                if w not in out.warnings:
                    out.warnings.append(w)
            if verdict == "raised" and not out.message:
                out.message = message
    return result


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------


def select(ops: list[Op], patterns: list[str]) -> list[Op]:
    pats = [p for arg in patterns for p in arg.split(",") if p]
    if not pats:
        return ops
    return [op for op in ops if any(fnmatch.fnmatchcase(op.name, p) or op.family == p
                                    for p in pats)]


#: ``--clock``: wall time, or this process's CPU time (its own turns on busy cores only)
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
_clock = [time.perf_counter]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="adcheck's gradcheck on refengine against torch.autograd.gradcheck, "
                    "interleaved in one process, on the same 49 ops and inputs.",
        epilog="Ratios are torch / ours (above 1: ours faster). Nothing asserts: the "
               "targets section says PASS or MISS.")
    parser.add_argument("--ops", action="append", default=[], metavar="PATTERN",
                        help="only ops whose name matches (shell wildcards, comma-separated, "
                             "repeatable) or of this family (unary, binary, reduction, linalg, "
                             "nn, complex)")
    parser.add_argument("--modes", default=",".join(MODES),
                        help=f"comma-separated, from {', '.join(MODES)} (default: all)")
    parser.add_argument("--repeat", type=int, default=5,
                        help="timed runs per side, interleaved; the median is kept (default 5)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the inputs (default 0)")
    parser.add_argument("--no-batch", action="store_true",
                        help="our side with batching off (gradcheck.set_batching(False))")
    parser.add_argument("--sweep", action="store_true",
                        help="also time `adcheck ops -q` over the whole registry")
    parser.add_argument("--sweep-args", default="",
                        help="extra arguments for the sweep, e.g. "
                             "'--check reverse,forward,gradgrad,reference,fast,fwgrad_bwgrad'")
    parser.add_argument("--sweep-timeout", type=float, default=3600.0,
                        help="seconds before the sweep is abandoned (default 3600)")
    parser.add_argument("--no-subprocess", action="store_true",
                        help="skip the import torch and adcheck --help timings")
    parser.add_argument("--torch-threads", type=int, default=1, metavar="N",
                        help="torch.set_num_threads(N); 0 keeps torch's default (one per core). "
                             "Default 1: these tensors are too small for a second thread to pay "
                             "off, and on a busy machine waits on torch's intra-op pool inflate "
                             "its times many fold")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                        help="time each run by wall time (default) or by this process's CPU "
                             "time (on a busy machine: without the turns other processes take)")
    parser.add_argument("--no-shares", action="store_true",
                        help="leave out our side's time by step of the check")
    parser.add_argument("--json", metavar="PATH", help="write every number to PATH")
    parser.add_argument("--list", action="store_true", help="print the op list and exit")
    return parser


def _batching(no_batch: bool) -> str:
    """Our side's batching: "default", or "off" / "unavailable" for --no-batch."""
    if not no_batch:
        return "default"
    set_batching = getattr(gradcheck, "set_batching", None)
    if set_batching is None:   # not exported yet: the module that holds it
        try:
            set_batching = importlib.import_module("adcheck.gradcheck.core.batching").set_batching
        except (ImportError, AttributeError):
            set_batching = None
    if set_batching is None:
        print("note: gradcheck.set_batching does not exist (yet); --no-batch has no "
              "effect, our side runs as it is", file=sys.stderr)
        return "unavailable"
    set_batching(False)
    return "off"


def _environment(args, torch, default_threads: int, batching: str, ops: list, modes) -> dict:
    """What the run ran on, recorded and printed as the header."""
    env = dict(python=platform.python_version(), platform=platform.platform(),
               cpus=os.cpu_count(), torch=torch.__version__, torch_threads=torch.get_num_threads(),
               torch_default_threads=default_threads,
               numpy=np.__version__, refengine=getattr(refengine, "__version__", "?"),
               repeat=args.repeat, seed=args.seed, batching=batching, ops=len(ops),
               clock=args.clock,
               argv=sys.argv[1:], load_before=load_average())
    print(f"adcheck vs torch.autograd: {len(ops)} ops, modes {', '.join(modes)}, "
          f"{args.repeat} interleaved repeats, median per side")
    warn_if_busy(env["load_before"], "before")
    print(f"python {env['python']}, torch {env['torch']} ({env['torch_threads']} threads), "
          f"numpy {env['numpy']}, {env['cpus']} cpus, batching: {batching}, clock: {args.clock}")
    if env["torch_threads"] != default_threads:
        print(f"torch runs on {env['torch_threads']} intra-op thread(s) instead of its default "
              f"{default_threads} (--torch-threads 0 keeps the default)")
    return env


def _check_loop(ops: list, modes, repeat: int, sides: dict) -> tuple[dict, float]:
    """Every (mode, op) pair, with progress on stderr; the results and the seconds."""
    results = {m: {} for m in modes}
    tty = sys.stderr.isatty()
    started = time.perf_counter()
    for mode in modes:
        for i, op in enumerate(ops, 1):
            msg = f"[{mode} {i}/{len(ops)}] {op.name}"
            print(f"\r{msg:60}" if tty else msg, end="" if tty else "\n", file=sys.stderr,
                  flush=True)
            gc.collect()
            results[mode][op.name] = run_pair(op, mode, repeat, sides)
    if tty:
        print("\r" + " " * 60 + "\r", end="", file=sys.stderr)
    return results, time.perf_counter() - started


def _print_process_timings(import_t, help_t, sweep, bench_s: float) -> None:
    print("\nprocess timings")
    if import_t:
        print(f"  python -c 'import torch': best {import_t['best_s']:.2f} s, first "
              f"{import_t['first_s']:.2f} s, median {import_t['median_s']:.2f} s "
              f"(anchor {ANCHOR_IMPORT_TORCH_S:.2f} s)")
    if help_t:
        print(f"  {help_t['command']}: best {help_t['best_s']:.3f} s, median "
              f"{help_t['median_s']:.3f} s (exit status {help_t['exit_status']})")
        if "on_path" in help_t:
            print(f"  {help_t['on_path']} --help (as found on PATH): best "
                  f"{help_t['on_path_best_s']:.3f} s")
    if sweep:
        if sweep.get("seconds") is None:
            print(f"  {sweep['command']}: {sweep['note']}")
        else:
            print(f"  {sweep['command']}: {sweep['seconds']:.1f} s on {sweep['cpus']} cpus, "
                  f"exit status {sweep['exit_status']}: {sweep['summary']}")
            for line in sweep["failures"][:20]:
                print(f"    {line[:160]}")
            if len(sweep["failures"]) > 20:
                print(f"    ... {len(sweep['failures']) - 20} more")
    print(f"  this benchmark's check loop: {bench_s:.1f} s")


def _write_json(path: str, env: dict, ops: list, modes, results: dict, tot: dict,
                **sections) -> None:
    doc = dict(
        schema="adcheck-bench-vs-torch", schema_version=1, env=env,
        anchors=dict(ms=ANCHOR_MS, import_torch_s=ANCHOR_IMPORT_TORCH_S),
        ops=[dict(name=op.name, family=op.family, inputs=op.describe()) for op in ops],
        results={m: {n: {side: out.to_dict() for side, out in r.items()}
                     for n, r in results[m].items()} for m in modes},
        totals={m: dict(t, ours_ms=1e3 * t["ours_s"], torch_ms=1e3 * t["torch_s"],
                        ours_best_ms=1e3 * t["ours_best_s"],
                        torch_best_ms=1e3 * t["torch_best_s"])
                for m, t in tot.items()},
        **sections)
    Path(path).write_text(json.dumps(doc, indent=1))
    print(f"\nwrote {path}")


def _modes(parser: argparse.ArgumentParser, args) -> list[str]:
    """The modes asked for; a usage error for an unknown one or a repeat below 1."""
    modes = [m for m in args.modes.split(",") if m]
    bad = [m for m in modes if m not in MODES]
    if bad:
        parser.error(f"unknown mode {bad[0]!r}; choose from {', '.join(MODES)}")
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    return modes


def _process_timings(args, bench_s) -> tuple:
    """``(import torch, adcheck --help, the sweep)`` timings, each ``None`` when not asked."""
    import_t = help_t = sweep = None
    if not args.no_subprocess:
        import_t = time_import_torch()
        help_t = time_help()
    if args.sweep:
        sweep = time_sweep(args.sweep_args.split(), args.sweep_timeout)
    _print_process_timings(import_t, help_t, sweep, bench_s)
    return import_t, help_t, sweep


def main(argv=None):
    parser = _parser()
    args = parser.parse_args(argv)
    modes = _modes(parser, args)
    all_ops = build_ops(args.seed)
    ops = select(all_ops, args.ops)
    if args.list:
        for op in ops:
            print(f"{op.name:17} {op.family:10} {op.describe()}")
        print(f"{len(ops)} ops")
        return 0
    if not ops:
        parser.error(f"no op matches {args.ops}; see --list")

    import torch
    import torch.autograd

    default_threads = torch.get_num_threads()
    if args.torch_threads > 0:
        torch.set_num_threads(args.torch_threads)
    batching = _batching(args.no_batch)
    _clock[0] = CLOCKS[args.clock]
    sides = {
        "ours": (refengine, {"gradcheck": gradcheck.gradcheck,
                             "gradgradcheck": gradcheck.gradgradcheck}),
        "torch": (torch, {"gradcheck": torch.autograd.gradcheck,
                          "gradgradcheck": torch.autograd.gradgradcheck}),
    }
    missing = check_ops_exist(ops, (refengine, torch))
    env = _environment(args, torch, default_threads, batching, ops, modes)
    results, bench_s = _check_loop(ops, modes, args.repeat, sides)
    env["load_after"] = load_average()

    print_table(ops, modes, results)
    tot = totals(ops, modes, results)
    print_totals(tot, len(ops))
    import_t, help_t, sweep = _process_timings(args, bench_s)

    warn_if_busy(env["load_after"], "after the check loop")
    batch_info = batching_info(ops, modes) if batching == "default" else None
    print_batching(batch_info, batching)
    canaries = run_canaries(modes, sides, args.seed)
    print_canaries(canaries)
    tgt = targets(tot, help_t, sweep, len(ops) == len(all_ops), *slow_per_op(results))
    print_targets(tgt)
    probs = problems(ops, modes, results)
    print_problems(probs, missing)
    shares = None
    if not args.no_shares:
        print()
        shares = check_shares.measure(ops, modes, rounds=min(args.repeat, 3))
        check_shares.print_shares(shares)
    if args.json:
        _write_json(args.json, env, ops, modes, results, tot, targets=tgt,
                    import_torch=import_t, help=help_t, sweep=sweep, problems=probs,
                    unevaluable=missing, canaries=canaries, batching_info=batch_info,
                    bench_seconds=bench_s, shares=shares)
    return 0


if __name__ == "__main__":
    sys.exit(main())
