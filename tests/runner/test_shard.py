"""runner.shard: every task in exactly one shard, the same everywhere, balanced.

Balance is judged against an independent oracle: for small instances, the
best possible split found by trying every assignment; the greedy split must
stay within 4/3 of it (Graham's bound for longest-first) and its spread
within the largest task.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from adcheck.runner.errors import RunnerError
from adcheck.runner.registry import OPINFO
from adcheck.runner.selection import plan, select
from adcheck.runner.shard import assign, parse_shard, shard_tasks, task_cost
from adcheck.runner.tasks import OpTask, Settings


@pytest.mark.parametrize("text, expected", [("1/1", (1, 1)), ("2/3", (2, 3)),
                                            (" 3/3", (3, 3))])
def test_parse_shard(text, expected):
    assert parse_shard(text) == expected


@pytest.mark.parametrize("text", ["0/3", "4/3", "3", "1/2/3", "a/b", "", "-1/2"])
def test_a_bad_shard_says_what_is_expected(text):
    with pytest.raises(RunnerError, match="expects K/N with 1 <= K <= N"):
        parse_shard(text)


def _best(costs: list, count: int) -> int:
    return min(max(sum(c for c, s in zip(costs, split) if s == k) for k in range(count))
               for split in itertools.product(range(count), repeat=len(costs)))


@pytest.mark.parametrize("seed", range(6))
def test_the_split_is_near_the_best_possible(seed):
    rng = np.random.default_rng(seed)
    costs = [int(c) for c in rng.integers(1, 1000, size=8)]
    shards = assign(list(range(8)), 3, costs)
    loads = [sum(c for c, s in zip(costs, shards) if s == k) for k in (1, 2, 3)]
    assert len(shards) == 8 and set(shards) <= {1, 2, 3}
    assert max(loads) <= 4 / 3 * _best(costs, 3)
    assert max(loads) - min(loads) <= max(costs)


def _plan(checks=("reverse", "forward")):
    return plan(select(OPINFO).infos, None, Settings(checks=checks))


def test_the_whole_registry_splits_into_disjoint_balanced_shards():
    tasks = _plan()
    parts = [shard_tasks(tasks, k, 4) for k in (1, 2, 3, 4)]
    seen = [t.index for part in parts for t in part]
    assert sorted(seen) == [t.index for t in tasks]              # each task once
    assert all(part == sorted(part, key=lambda t: t.index) for part in parts)  # plan order
    costs = {t.index: task_cost(t) for t in tasks}
    loads = [sum(costs[t.index] for t in part) for part in parts]
    assert max(loads) - min(loads) <= max(costs.values())


def test_the_assignment_depends_only_on_the_plan():
    # a second plan made from scratch (new task objects) is split the same way
    first = [(t.op, t.dtype) for t in shard_tasks(_plan(), 2, 3)]
    again = [(t.op, t.dtype) for t in shard_tasks(_plan(), 2, 3)]
    assert first == again and first


def test_a_measured_task_costs_its_checks_and_another_its_samples():
    table = {"registry": "opinfo", "costs": {"sin|float64": {"reverse": 300, "forward": 200,
                                                             "gradgrad": 900}},
             "per_sample_us": {"reverse": 10, "forward": 20, "gradgrad": 50}}
    settings = Settings(checks=("reverse", "forward"))
    assert task_cost(OpTask(0, "sin", "float64", settings), table) == 500
    samples = len(OPINFO.sample_names(OPINFO.get("cos"), OPINFO.dtype("float64")))
    assert task_cost(OpTask(1, "cos", "float64", settings), table) == samples * 30
    assert task_cost(OpTask(2, "sin", "float64", settings, sample=0), table) == 30
