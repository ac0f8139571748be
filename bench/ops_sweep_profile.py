"""Where the time of ``adcheck ops`` over the built-in registry goes, by sampling.

    python bench/ops_sweep_profile.py              # every task, in this process
    python bench/ops_sweep_profile.py --every 3    # one task in three
    python bench/ops_sweep_profile.py --every 3 --no-explore
    python bench/ops_sweep_profile.py --every 2 --checks gradgrad

Runs the sweep's tasks (the default checks, the quick explore pass, the
registry's every op and dtype) one after the other in this process, as a
worker runs them, while a thread looks at the main thread's stack every few
milliseconds (a statistical profile: unlike cProfile it does not slow the
Python-heavy parts more than the rest, so the shares are the run's own).
Each look is counted once per part of the work found on the stack
(``PARTS``, innermost match first, but the explore pass whole), then per
check. bench/cli_startup.md and bench/ops_sweep.md quote runs.

The thread looks only when the main thread lets go of the GIL: at a system
call (reading /proc, a pipe) far more often than in NumPy or Python code, so
parts that make system calls come out larger than they are (in one run,
"setting up the problem" 29 % here and 4 % by py-spy, which samples from
outside: ``py-spy record -f raw -- python bench/ops_sweep_profile.py``). The
shares by check hold; for the parts, prefer py-spy where it is installed.
"""
from __future__ import annotations

import argparse
import sys
import threading
import time
from collections import Counter

#: a part of the work: the name of a function on the stack, and its file
PARTS = (
    ("explore pass", "explore", "gradcheck/explore/search.py"),
    ("noise floor of the differences", "noise_floor", "gradcheck/numerics/noisefloor.py"),
    # (since the noise floor's moves ride in the differences' first evaluation, only
    # the floor's own arithmetic is left to it)
    ("noise floor of the differences", "measured_from", "gradcheck/numerics/noisefloor.py"),
    ("mpmath reference", "reference_blocks", "gradcheck/numerics/reference.py"),
    ("numerical: the function's evaluations", "perturbed_outputs", "gradcheck/core/numerical.py"),
    ("numerical: Richardson's tableau, the rest", "expected_jacobian",
     "gradcheck/core/reuse.py"),
    ("analytical Jacobian (vjps, jvps)", "ad_blocks", "gradcheck/core/analytical.py"),
    ("setting up the problem", "__init__", "gradcheck/core/problem.py"),
    ("determinism", "determinism_results", "gradcheck/verdict/faults.py"),
    ("scaling, undefined gradients, dtypes", "other_checks", "gradcheck/flow.py"),
    ("making the samples", "samples", "runner/registry.py"),
)
#: the function that runs one check, and its first argument's name
CHECK = ("run_check", "runner/checks.py")


def _part(frame) -> tuple:
    """``(part, check)`` of one look at the stack: the innermost part found,
    except that everything under the explore pass is the explore pass's."""
    part = check = None
    while frame is not None:
        code = frame.f_code
        found = next((name for name, func, path in PARTS
                      if code.co_name == func and code.co_filename.endswith(path)), None)
        if part is None or found == PARTS[0][0]:
            part = found or part
        if check is None and code.co_name == CHECK[0] and code.co_filename.endswith(CHECK[1]):
            check = frame.f_locals.get("check") or frame.f_locals.get("name")
        frame = frame.f_back
    return part or "the rest of the checks", str(check)


def sample(target, interval: float) -> tuple:
    """Run ``target()`` while sampling the main thread; ``(parts, checks, looks)``."""
    main = threading.main_thread().ident
    parts, checks, done = Counter(), Counter(), threading.Event()

    def look():
        while not done.wait(interval):
            frame = sys._current_frames().get(main)
            if frame is not None:
                part, check = _part(frame)
                parts[part] += 1
                checks[check] += 1
    watcher = threading.Thread(target=look, daemon=True)
    watcher.start()
    try:
        target()
    finally:
        done.set()
        watcher.join()
    return parts, checks, sum(parts.values())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=int, default=1, help="run one task in N (default 1)")
    parser.add_argument("--interval", type=float, default=0.005, help="seconds between looks")
    parser.add_argument("--checks", default="reverse,forward,gradgrad,reference",
                        help="the checks run (comma-separated; default: the sweep's)")
    parser.add_argument("--no-explore", action="store_true",
                        help="without the quick explore pass (what it costs: compare the CPU)")
    args = parser.parse_args(argv)
    from adcheck.runner.registry import OpinfoRegistry
    from adcheck.runner.selection import plan, select
    from adcheck.runner.tasks import build_settings, run_task
    registry = OpinfoRegistry()
    settings = build_settings(tuple(args.checks.split(",")),
                              explore=None if args.no_explore else "quick")
    from ops_sweep_count import sweep_plan   # (bench/: the same plan as the count's)
    tasks = sweep_plan(plan, select(registry, (), (), "refengine").infos, settings)[::args.every]
    results = []
    start, cpu = time.perf_counter(), time.process_time()
    parts, checks, looks = sample(lambda: results.extend(
        r for t in tasks for r in run_task(t).results), args.interval)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(f"{len(tasks)} tasks, {len(results)} results, {wall:.1f} s wall, {cpu:.1f} s CPU, "
          f"{looks} looks")
    for title, counts in (("part of the work", parts), ("check", checks)):
        print(f"\n{title:44} {'share':>6}")
        for name, count in counts.most_common():
            print(f"{name:44} {100 * count / looks:5.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
