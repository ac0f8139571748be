"""A registry's ``preload``: the worker processes start with those modules
imported (their fork server imported them once), however the pool was
started before; what a run of PyTorch's op_db uses to import op_db once."""
from __future__ import annotations

import sys
from types import SimpleNamespace

from adcheck.runner.checks import Policy
from adcheck.runner.pool import shared_pool
from adcheck.runner.run import run_tasks
from adcheck.runner.selection import plan, select
from adcheck.runner.tasks import Settings

from toy_registry import ToyRegistry

#: a standard module that nothing adcheck, torch or pytest imports: present in a
#: worker only if its fork server preloaded it
MARKER = "sched"


def preloaded(x):
    """x * x in a process that has the marker module, else an error saying so."""
    if MARKER not in sys.modules:
        raise RuntimeError(f"{MARKER} was not preloaded in this worker")
    return x * x


class CheckingRegistry(ToyRegistry):
    """The toy registry whose op fails in a worker that lacks ``MARKER``."""

    def call(self, info, sample, engine: str):
        call = super().call(info, sample, engine)
        return SimpleNamespace(**{**vars(call), "func": preloaded})


class PreloadingRegistry(CheckingRegistry):
    """The same, asking for ``MARKER`` to be preloaded."""

    name = "toy-preload"
    preload = (MARKER,)


def _statuses(registry) -> list:
    settings = Settings(("reverse",), Policy(), timeout=60, registry=registry)
    outcome = run_tasks(plan(select(registry, ("toy_square",)).infos, None, settings), jobs=2)
    assert outcome.status == "done"
    return [(r.status, r.message) for r in outcome.results]


def test_workers_start_with_the_registrys_preload():
    assert MARKER not in shared_pool().preload
    without = _statuses(CheckingRegistry())       # the control: the pool as it was
    assert [s for s, _ in without] == ["error", "error"]
    assert "was not preloaded" in without[0][1]
    assert [s for s, _ in _statuses(PreloadingRegistry())] == ["passed", "passed"]
    assert MARKER in shared_pool().preload
