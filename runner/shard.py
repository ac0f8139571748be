"""Sharding: a deterministic, balanced part of a plan, computed alike everywhere.

``adcheck ops --shard K/N`` and the pytest plugin's ``--adcheck-shard K/N``
run shard K of N of the plan (``runner.selection.plan``): every process,
on every machine, computes the same assignment from the plan alone, so N
CI jobs given ``--shard 1/N`` ... ``--shard N/N`` run every task exactly
once, and ``adcheck merge`` (``runner.merge``) joins their reports.

Balance: each task (an op in a dtype) gets a cost, and the tasks are dealt
longest first, each to the shard with the least cost so far (ties: the lower
shard), which keeps the longest shard within 4/3 of the best possible. A
task's cost is its measured time, per check, from ``runner/costs.json``
(a committed table: ``bench/shard_costs.py`` writes it from a sweep's JSON
report), or for a task the table does not know, its number of samples
times the table's mean time per sample of each check. Costs are integers
(microseconds), so the assignment involves no floating point order.

Example::

    k, n = parse_shard("2/3")
    mine = shard_tasks(tasks, k, n)      # in plan order
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from adcheck.runner.errors import RunnerError

COSTS = Path(__file__).with_name("costs.json")
#: microseconds per sample and check when no table is at hand (a sweep's order of magnitude)
FALLBACK_PER_SAMPLE_US = 10_000


def parse_shard(text: str) -> tuple[int, int]:
    """``(k, n)`` from ``"k/n"`` with 1 <= k <= n; ``RunnerError`` otherwise."""
    parts = str(text).split("/")
    try:
        k, n = (int(p) for p in parts)
    except ValueError:
        k = n = 0
    if len(parts) != 2 or not 1 <= k <= n:
        raise RunnerError(f"--shard expects K/N with 1 <= K <= N (for example 2/3 for the "
                          f"second of three shards), got {text!r}")
    return k, n


@lru_cache(maxsize=1)
def cost_table() -> dict:
    """The committed table: ``{"costs": {"op|dtype": {check: us}}, "per_sample_us":
    {check: us}}`` (empty when the file is missing)."""
    try:
        data = json.loads(COSTS.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"costs": {}, "per_sample_us": {}}
    return data


def task_cost(task, table: dict | None = None) -> int:
    """The cost of one ``OpTask`` in microseconds (see the module docstring)."""
    table = cost_table() if table is None else table
    checks = task.settings.checks
    known = table.get("costs", {}).get(f"{task.op}|{task.dtype}") \
        if task.settings.registry.name == table.get("registry", "opinfo") else None
    if known is not None and task.sample is None and all(c in known for c in checks):
        return sum(int(known[c]) for c in checks)
    per_sample = table.get("per_sample_us", {})
    weight = sum(int(per_sample.get(c, FALLBACK_PER_SAMPLE_US)) for c in checks)
    return max(1, _samples(task) * weight)


def _samples(task) -> int:
    if task.sample is not None:
        return 1
    registry = task.settings.registry
    try:
        return len(registry.sample_names(registry.get(task.op), registry.dtype(task.dtype)))
    except Exception:  # noqa: BLE001 - a broken recipe is the task's error, reported when run
        return 1


def assign(tasks: list, count: int, costs: list | None = None) -> list:
    """The shard (1 to ``count``) of each task, longest first to the least loaded."""
    costs = [task_cost(t) for t in tasks] if costs is None else costs
    loads = [0] * count
    shard_of = [0] * len(tasks)
    for position in sorted(range(len(tasks)), key=lambda p: (-costs[p], p)):
        lightest = min(range(count), key=lambda s: (loads[s], s))
        loads[lightest] += costs[position]
        shard_of[position] = lightest + 1
    return shard_of


def shard_tasks(tasks: list, k: int, n: int) -> list:
    """The tasks of shard ``k`` of ``n``, in plan order."""
    return [t for t, s in zip(tasks, assign(tasks, n)) if s == k]


def task_id(op: str, dtype: str) -> str:
    """How a task is named in a shard record: ``op|dtype``."""
    return f"{op}|{dtype}"


def record(tasks: list, mine: list, k: int, n: int) -> dict:
    """What a shard's report says about its place in the whole: the plan (every
    task of the unsharded run, in order) and its own tasks."""
    return {"index": k, "count": n, "plan": [task_id(t.op, t.dtype) for t in tasks],
            "tasks": [task_id(t.op, t.dtype) for t in mine]}
