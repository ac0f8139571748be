"""What isolating every check in a worker process costs (runner.pool).

    python bench/worker_bench.py [--repeats N]
    python bench/worker_bench.py --registry torch [--repeats N]

Measures, each as the median of N repeats:

- cold start: a new pool's first worker, from ``prestart`` to its "ready"
  (the fork server starts and imports the libraries, then forks the worker);
- respawn: one more worker once the fork server runs (what replacing a
  crashed worker costs);
- spawn start: a worker started with ``spawn`` instead (a fresh interpreter
  that imports everything: the cost without a fork server);
- per task: one small task (sin, float64, sample 0, the reverse check) run on
  a warm worker, against the same task run in this process.

With ``--registry torch`` (PyTorch's op_db, ``runner.torchregistry``), each in
a fresh process, with and without the registry's ``preload`` (the fork server
importing op_db before it forks):

- first result: from an idle process to the first task's result (mul,
  float64, sample 0, reverse), the worker's start included;
- replaced worker: the same task once the worker has been replaced (as after
  a crash or a timeout), on the fork server already running.

Not a test: the numbers depend on the machine and its load.
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from adcheck.runner.torchregistry import TorchRegistry  # noqa: E402 - cheap: imports no torch


def _ready(pool) -> float:
    """Seconds until the newest worker of ``pool`` says it is ready."""
    start = time.perf_counter()
    pool.prestart(len(pool.workers) + 1)
    worker = pool.workers[-1]
    message = worker.conn.recv()
    assert message == ("ready",), message
    worker.ready = True
    return time.perf_counter() - start


def _cold_start(context_name: str) -> float:
    from adcheck.runner import pool as pools
    pool = pools.WorkerPool()
    if context_name != "default":
        pool.context = multiprocessing.get_context(context_name)
    try:
        return _ready(pool)
    finally:
        pool.shutdown()


def cold_start(context_name: str = "default") -> float:
    """A cold start in a fresh Python process (the fork server is one per process)."""
    found = subprocess.run([sys.executable, __file__, "--cold", context_name], check=True,
                           capture_output=True, text=True, cwd=REPO,
                           env=dict(os.environ, PYTHONPATH=str(REPO)))
    return float(found.stdout.split()[-1])


def respawn(repeats: int) -> list:
    from adcheck.runner import pool as pools
    pool = pools.WorkerPool()
    try:
        _ready(pool)
        return [_ready(pool) for _ in range(repeats)]
    finally:
        pool.shutdown()


def per_task(repeats: int) -> tuple:
    from adcheck.runner.checks import Policy
    from adcheck.runner.run import run_tasks
    from adcheck.runner.tasks import OpTask, Settings
    task = OpTask(0, "sin", "float64", Settings(("reverse",), Policy(), timeout=60), 0)
    run_tasks([task])                          # warm the pool and this process alike
    run_tasks([task], in_process=True)
    timings = {True: [], False: []}
    for _ in range(repeats):
        for here in (True, False):
            start = time.perf_counter()
            outcome = run_tasks([task], in_process=here)
            timings[here].append(time.perf_counter() - start)
            assert [r.status for r in outcome.results] == ["passed"]
    return timings[True], timings[False]


class PlainTorchRegistry(TorchRegistry):
    """PyTorch's op_db without the preload: each worker imports op_db itself."""

    preload = ()


def _torch_task(preload: bool) -> tuple:
    """``(first result, after a replacement)`` in seconds, in this fresh process."""
    from adcheck.runner.checks import Policy
    from adcheck.runner.pool import shared_pool
    from adcheck.runner.run import run_tasks
    from adcheck.runner.tasks import OpTask, Settings
    from adcheck.runner.torchregistry import TorchRegistry
    registry = TorchRegistry() if preload else PlainTorchRegistry()
    task = OpTask(0, "mul", "float64", Settings(("reverse",), Policy(engine="torch"), 600,
                                                registry=registry), 0)
    timings = []
    for _ in range(2):
        start = time.perf_counter()
        outcome = run_tasks([task])
        timings.append(time.perf_counter() - start)
        assert [r.status for r in outcome.results] == ["passed"], outcome.results
        shared_pool().shutdown()          # the next task gets a new worker
    return tuple(timings)


def torch_rows(repeats: int) -> list:
    rows = []
    for preload in (True, False):
        found = [subprocess.run([sys.executable, __file__, "--torch-cold", str(int(preload))],
                                check=True, capture_output=True, text=True, cwd=REPO,
                                env=dict(os.environ, PYTHONPATH=str(REPO))).stdout.split()
                 for _ in range(repeats)]
        how = "op_db preloaded by the fork server" if preload else "each worker imports op_db"
        rows += [(f"first result ({how})", statistics.median(float(f[-2]) for f in found)),
                 (f"replaced worker ({how})", statistics.median(float(f[-1]) for f in found))]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--registry", choices=("opinfo", "torch"), default="opinfo")
    parser.add_argument("--cold", metavar="CONTEXT", help=argparse.SUPPRESS)
    parser.add_argument("--torch-cold", metavar="PRELOAD", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.cold:
        print(_cold_start(options.cold))
        return
    if options.torch_cold is not None:
        print(*_torch_task(bool(int(options.torch_cold))))
        return
    if options.registry == "torch":
        rows = torch_rows(options.repeats)
        width = max(len(name) for name, _ in rows)
        for name, seconds in rows:
            print(f"{name:<{width}}  {seconds:8.2f} s")
        return
    repeats = options.repeats
    ms = 1000.0
    rows = [("cold start (fork server + first worker)",
             statistics.median(cold_start() for _ in range(repeats))),
            ("respawn (a fork of the warm server)", statistics.median(respawn(repeats))),
            ("spawn start (no fork server)",
             statistics.median(cold_start("spawn") for _ in range(repeats)))]
    here, isolated = per_task(4 * repeats)
    rows += [("one small task, in this process", statistics.median(here)),
             ("one small task, on a warm worker", statistics.median(isolated))]
    width = max(len(name) for name, _ in rows)
    for name, seconds in rows:
        print(f"{name:<{width}}  {seconds * ms:8.1f} ms")
    print(f"{'overhead per task':<{width}}  "
          f"{(statistics.median(isolated) - statistics.median(here)) * ms:8.1f} ms")


if __name__ == "__main__":
    main()
