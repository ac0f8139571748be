"""Workers compute with one torch thread: the run's parallelism is its
workers, and torch's default of a thread per core in each of them
oversubscribes the cores (OpenMP threads spinning for each other made a
sweep's norms and convolutions tens of times slower)."""
from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from adcheck.runner.checks import Policy
from adcheck.runner.run import run_tasks
from adcheck.runner.selection import plan, select
from adcheck.runner.tasks import Settings

from toy_registry import ToyRegistry

torch = pytest.importorskip("torch")


def squared_on_one_thread(x):
    """x * x in a process whose torch computes on one thread, else an error."""
    import torch as worker_torch
    if worker_torch.get_num_threads() != 1:
        raise RuntimeError(f"torch runs {worker_torch.get_num_threads()} threads here")
    return x * x


class ThreadRegistry(ToyRegistry):
    """The toy registry whose op fails in a worker where torch has several threads."""

    def call(self, info, sample, engine: str):
        call = super().call(info, sample, engine)
        return SimpleNamespace(**{**vars(call), "func": squared_on_one_thread})


@pytest.mark.torch_threads   # (the count this process's torch starts with: its default)
@pytest.mark.skipif(bool(os.environ.get("OMP_NUM_THREADS")),
                    reason="OMP_NUM_THREADS is set: the workers keep the user's choice")
@pytest.mark.skipif((os.cpu_count() or 1) < 2 or torch.get_num_threads() < 2,
                    reason="torch already runs one thread here: nothing to tell apart")
def test_workers_run_torch_on_one_thread():
    settings = Settings(("reverse",), Policy(), timeout=60, registry=ThreadRegistry())
    outcome = run_tasks(plan(select(ThreadRegistry(), ("toy_square",)).infos, None, settings),
                        jobs=2)
    assert outcome.status == "done"
    assert [(r.status, r.message) for r in outcome.results] == [("passed", "")] * 2
