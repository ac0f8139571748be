"""Where the time of PyTorch's op_db sweep goes: a slice profiled in one process.

    python bench/opdb_profile.py                                  # the slice of opdb_profile.md
    python bench/opdb_profile.py --ops 'atan2,asinh' --dtype complex64,float32 --top 30
    python bench/opdb_profile.py --from-json sweep.json            # shares of a saved run
    python bench/opdb_profile.py --ops 'a*' --cpu                   # CPU seconds, no profiler

Runs the tasks ``adcheck ops --registry torch`` would run for the selected
ops (every dtype torch supports backward for, the checks op_db's gradient
tests run) in this process, under cProfile, and prints: the time by check,
by dtype and by the plan of the Jacobians (from the results), then the
functions with the most cumulative and own time, grouped into the layers a
reader can act on (torch's kernels and autograd, adcheck's gradcheck,
op_db's sample inputs, the runner). ``--from-json`` reads a saved
``adcheck ops --registry torch --format json`` run instead and prints its
shares only (the whole op_db, or any slice, as the workers ran it).

The clock of the shares is each check's own ``seconds`` (wall time inside
the worker); the profile's is this process's. Both are inflated alike on a
busy machine; the shares are what to read.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: the layer a profiled function belongs to, by a piece of its file's path
LAYERS = (("/torch/testing/", "op_db samples"), ("/torch/", "torch"),
          ("/gradcheck/", "adcheck gradcheck"), ("/runner/", "adcheck runner"),
          ("/opinfo/", "adcheck opinfo"), ("numpy", "numpy"))


def shares(results: list) -> str:
    """Seconds and shares by check, dtype, plan and status of a run's results."""
    total = sum(r.get("seconds") or 0.0 for r in results) or 1.0
    lines = [f"{len(results)} results, {total:.1f} s of checks"]
    for key in ("check", "dtype", "plan", "status"):
        by, n = Counter(), Counter()
        for r in results:
            by[r.get(key)] += r.get("seconds") or 0.0
            n[r.get(key)] += 1
        lines.append(f"by {key}: " + ", ".join(
            f"{k} {v:.1f} s ({100 * v / total:.0f}%, {n[k]})" for k, v in by.most_common()))
    return "\n".join(lines)


def _tasks(ops: list, dtypes: list | None):
    from adcheck.cli.runs import open_registry
    from adcheck.runner.checks import Policy
    from adcheck.runner.selection import plan, select
    from adcheck.runner.tasks import Settings
    registry = open_registry("torch", ())
    # (the command's defaults for this registry: its own checks, on torch)
    checks, engine = tuple(registry.default_checks), registry.engine
    infos = select(registry, ops, (), engine).infos
    settings = Settings(checks, Policy(True, engine, 0, 512 * 2**20), 300.0, (), registry)
    return plan(infos, dtypes, settings)


def _layers(stats: pstats.Stats) -> str:
    """Own time by layer (file path), the profile's whole time."""
    by = Counter()
    for (path, _, _), (_, _, own, _, _) in stats.stats.items():
        layer = next((name for piece, name in LAYERS if piece in path), "other")
        by[layer] += own
    total = sum(by.values()) or 1.0
    return "own time by layer: " + ", ".join(
        f"{k} {v:.1f} s ({100 * v / total:.0f}%)" for k, v in by.most_common())


def profile(ops: list, dtypes: list | None, top: int, cpu_only: bool = False) -> None:
    from adcheck.runner.run import run_tasks
    started = time.perf_counter()
    tasks = _tasks(ops, dtypes)
    print(f"{len(tasks)} tasks (op x dtype), planned in {time.perf_counter() - started:.1f} s "
          "(op_db imported and its entries built)")
    profiler = cProfile.Profile()
    started, cpu = time.perf_counter(), time.process_time()
    if not cpu_only:
        profiler.enable()
    outcome = run_tasks(tasks, in_process=True)
    profiler.disable()
    # (CPU seconds: what a loaded machine does not inflate, unlike the wall time)
    print(f"ran in {time.perf_counter() - started:.1f} s, {time.process_time() - cpu:.1f} CPU s"
          f"{'' if cpu_only else ' under cProfile'}, status {outcome.status}")
    results = [dict(op=r.op, dtype=r.dtype, check=r.check, seconds=r.seconds,
                    plan=getattr(r, "plan", None), status=r.status) for r in outcome.results]
    print(shares(results))
    if cpu_only:
        return
    stats = pstats.Stats(profiler)
    print(_layers(stats))
    for order in ("cumulative", "tottime"):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats(order).print_stats(top)
        text = out.getvalue()
        print(f"\n--- by {order} ---\n" + text[text.index("ncalls"):])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", default="asinh,atan2,addcmul,abs,amax",
                        help="comma-separated op names or patterns (default: the slice of "
                             "opdb_profile.md)")
    parser.add_argument("--dtype", default=None, help="comma-separated dtypes (default: every "
                        "dtype torch supports backward for)")
    parser.add_argument("--top", type=int, default=25, help="functions listed (default 25)")
    parser.add_argument("--from-json", metavar="PATH",
                        help="a saved 'adcheck ops --registry torch --format json' run: its "
                             "shares only")
    parser.add_argument("--cpu", action="store_true",
                        help="no cProfile: the CPU seconds of the run and its shares only")
    args = parser.parse_args(argv)
    if args.from_json:
        print(shares(json.loads(Path(args.from_json).read_text())["results"]))
        return 0
    profile(args.ops.split(","), args.dtype.split(",") if args.dtype else None, args.top,
            args.cpu)
    return 0


if __name__ == "__main__":
    sys.exit(main())
