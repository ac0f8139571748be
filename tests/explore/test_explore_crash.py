"""A function that kills the process at an explored point (issue 30, "Bad
input"): the point becomes a crash result naming its input, what was found
before is kept, and exploring goes on with the other points."""
from __future__ import annotations

import json
import textwrap

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from click.testing import CliRunner  # noqa: E402

from adcheck.cli.main import cli  # noqa: E402
from adcheck.gradcheck import check  # noqa: E402
from adcheck.gradcheck.explore import watch  # noqa: E402

FRAGILE = textwrap.dedent('''
    import ctypes
    import torch

    def fragile(x):
        """sin, but the process dies (SIGSEGV) where an entry is exactly zero."""
        if bool((x == 0).any()):
            ctypes.string_at(0)
        return torch.sin(x)
''')


def _x(*values):
    return torch.tensor(values, dtype=torch.float64, requires_grad=True)


def test_a_segfault_at_an_explored_point_is_a_crash_naming_the_point(tmp_path):
    path = tmp_path / "fragile.py"
    path.write_text(FRAGILE)
    result = CliRunner().invoke(cli, ["check", f"{path}:fragile", "--engine", "torch",
                                      "--check", "reverse,forward", "--inputs", "randn(4)",
                                      "--format", "json"], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    results = json.loads(result.stdout)["results"]
    # the target is not lost: both checks are there, each failing on the crash
    assert [r["check"] for r in results] == ["reverse", "forward"]
    for r in results:
        assert r["status"] == "failed", r["message"]
        crashes = [f for f in r["failures"] if f["check"] == "explore-crash"]
        assert crashes and all(f["check"] == "explore-crash" for f in r["failures"])
        assert "SIGSEGV" in crashes[0]["diagnosis"]
        assert "exact zero" in crashes[0]["detail"]
        assert "reproduce with: input0 = torch.tensor([0.0, 0.0, 0.0, 0.0]" in crashes[0]["detail"]


def _announced(func, inputs, crashed=None, **keywords):
    seen: list = []
    with watch.watching(seen.append, lambda: seen.append(None), crashed):
        report = check(func, inputs, seed=0, **keywords)
    return report, [k for k in seen if k is not None], seen


def test_every_explored_point_is_announced_before_it_runs_and_after():
    report, keys, seen = _announced(torch.sin, (_x(0.5, -1.5, 2.0),))
    assert report.passed and len(keys) == report.counts["explore"]["tried"] > 0
    assert seen == [x for k in keys for x in (k, None)]      # before, after, one at a time
    assert len(set(keys)) == len(keys)


def test_a_point_that_crashed_is_recorded_not_run_and_exploring_goes_on():
    inputs = (_x(0.5, -1.5, 2.0),)
    _, keys, _ = _announced(torch.sin, inputs)
    ran = []

    def sin(x):
        ran.append(x.detach().clone())
        return torch.sin(x)

    report, again, _ = _announced(sin, inputs, crashed={keys[0]: "it crashed with SIGSEGV"})
    assert keys[0] not in again and again == keys[1:]       # the others are still tried
    assert not report.passed
    (crash,) = [r for r in report.failures if r.check == "explore-crash"]
    assert "it crashed with SIGSEGV" in crash.diagnosis and "reproduce with:" in crash.detail
    assert report.counts["explore"]["crashes"] == 1
    assert "1 crashed the process" in report.results[-1].detail
    # the given inputs were checked (their results are kept) before exploring
    assert any(torch.equal(x, inputs[0].detach()) for x in ran)


def test_keys_depend_on_the_values_and_only_on_them():
    a = {0: torch.zeros(3, dtype=torch.float64).numpy()}
    b = {0: torch.tensor([0.0, 0.0, -0.0], dtype=torch.float64).numpy()}
    assert watch.point_key(a) == watch.point_key({0: a[0].copy()})
    assert watch.point_key(a) != watch.point_key(b)      # -0.0 is another point
    assert watch.point_key(a) != watch.point_key({1: a[0]})


class _Worker:
    """What ``RunLoop._resume`` reads of a worker."""

    def __init__(self, task, point, samples=0):
        self.task, self.point, self.samples = task, point, samples


def test_the_run_loop_runs_a_task_again_only_for_a_death_at_an_explored_point():
    from types import SimpleNamespace

    from adcheck.runner.runloop import MAX_CRASHES, RunLoop
    loop = RunLoop(SimpleNamespace(workers=[]), [], 1, None)
    task = SimpleNamespace(index=7)
    # died at a point (a crash, or a hang past --timeout, killed): queued again, recorded
    assert loop._resume(_Worker(task, "k0"), "it crashed") and list(loop.pending) == [task]
    assert loop.crashed[7] == {"k0": "it crashed"}
    # died outside any point, or after sending a sample: the task's error instead
    assert not loop._resume(_Worker(task, None), "it crashed")
    assert not loop._resume(_Worker(task, "k1", samples=1), "it crashed")
    for k in range(1, MAX_CRASHES):
        assert loop._resume(_Worker(task, f"k{k}"), "again")
    assert not loop._resume(_Worker(task, "one more"), "again")     # at most MAX_CRASHES
    assert len(loop.crashed[7]) == MAX_CRASHES
