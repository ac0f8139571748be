"""Instructions the checks of ``adcheck ops`` over the built-in registry execute.

    python bench/ops_sweep_count.py                  # one task in ten, the quick pass on
    python bench/ops_sweep_count.py --every 5 --no-explore
    PYTHONPATH=/tmp/copy python bench/ops_sweep_count.py    # another tree

Runs one task in N of the sweep's plan (the default checks, every op and
dtype of the registry) in one process, as a worker runs them, under
valgrind's callgrind, and prints the instructions counted inside the tasks
alone: ``--toggle-collect=functools_reduce`` counts only what runs inside
``functools.reduce``, and only the tasks run there (the interpreter's start,
the imports and a warm-up task, which loads what the checks import lazily,
are left out). No load on the machine changes the count (CPU and wall time
do, by 10 to 20 % on the shared VM). ``PYTHONHASHSEED=0`` and one BLAS
thread; the quick pass's time budget is lifted (under valgrind a point takes
some fifty times its time, and a budget that ran out would change what is
counted), so the statuses printed are the sweep's own. About 50 times slower than a plain run.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from collections import Counter


def _inside(every: int, explore: bool) -> None:
    """Inside the callgrind run: a warm-up task, then the slice inside reduce."""
    import functools

    from adcheck.gradcheck.explore import search
    from adcheck.runner.registry import OpinfoRegistry
    from adcheck.runner.selection import plan, select
    from adcheck.runner.tasks import build_settings, run_task
    search.QUICK_BUDGET = 1e9
    settings = build_settings(("reverse", "forward", "gradgrad", "reference"),
                              explore="quick" if explore else None)
    tasks = sweep_plan(plan, select(OpinfoRegistry(), (), (), "refengine").infos, settings)
    run_task(tasks[1])
    chosen = tasks[::every]
    statuses = Counter()

    def one(_, task):
        statuses.update(r.status for r in run_task(task).results)
    functools.reduce(one, chosen, None)
    print(f"{len(chosen)} tasks, {sum(statuses.values())} results, {dict(statuses)}")


def sweep_plan(plan, infos, settings) -> list:
    """The plan as ``adcheck ops`` makes it: its tasks together, so that an
    in-place variant is compared with its op (a tree before that had no
    ``together``: its plan as it was)."""
    import inspect
    if "together" in inspect.signature(plan).parameters:
        return plan(infos, None, settings, together=True)
    return plan(infos, None, settings)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=int, default=10, help="run one task in N (default 10)")
    parser.add_argument("--no-explore", action="store_true", help="without the quick pass")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.inside:
        _inside(args.every, not args.no_explore)
        return 0
    command = ["valgrind", "--tool=callgrind", "--collect-atstart=no",
               "--toggle-collect=functools_reduce", "--callgrind-out-file=/dev/null",
               os.path.realpath(sys.executable), os.path.abspath(__file__), "--inside",
               "--every", str(args.every)] + (["--no-explore"] if args.no_explore else [])
    # (BLAS threads spinning while they wait are counted too: about 1 % from run to run)
    done = subprocess.run(command, capture_output=True, text=True,
                          env={**os.environ, "PYTHONHASHSEED": "0", "OMP_NUM_THREADS": "1",
                               "OPENBLAS_NUM_THREADS": "1"})
    found = re.search(r"Collected : (\d+)", done.stderr)
    print(done.stdout.strip())
    if found is None:
        print(done.stderr[-2000:], file=sys.stderr)
        return 1
    print(f"{int(found.group(1)) / 1e9:.3f} G instructions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
