"""The plugin's checks compute on one torch thread in each of several
pytest-xdist workers, as the ``adcheck`` command's workers do: each worker is
a process with torch's default of a thread per core, and together they
oversubscribed the cores (op_db's instance_norm, batch_norm and conv2d under
``-n 2``: 38 to 123 s of test time beside another job, 3 s on one thread).
A test's own torch code keeps the count it had, and without xdist the check
keeps torch's count too (the process has the cores to itself)."""
from __future__ import annotations

import importlib.util

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch)")

pytest_plugins = ["pytester"]

needs_cores = pytest.mark.skipif(
    torch.get_num_threads() < 2,
    reason="torch starts with one thread on this machine: nothing to tell apart")
needs_xdist = pytest.mark.skipif(
    importlib.util.find_spec("xdist") is None,
    reason="pytest-xdist is not installed (pip install adcheck[xdist]); the -n 2 run needs it")

#: a torch Function whose backward records torch's thread count, and tests that
#: check it with ``assert_gradients`` and with the ``adcheck_kernel`` marker
COUNTED = '''
import torch
from pytest_adcheck import assert_gradients

SEEN = []


class CountedSin(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, grad):
        SEEN.append(torch.get_num_threads())
        (x,) = ctx.saved_tensors
        return grad * x.cos()


def test_{name}():
    before = torch.get_num_threads()
    SEEN.clear()
    assert_gradients(CountedSin.apply, torch.randn(3, dtype=torch.float64, requires_grad=True),
                     order=1, explore=False)
    assert SEEN and set(SEEN) == {{{during}}}, SEEN
    assert torch.get_num_threads() == before
'''


@needs_cores
@needs_xdist
def test_under_several_workers_a_check_runs_on_one_thread_and_gives_the_count_back(pytester):
    pytester.makepyfile(test_one=COUNTED.format(name="one", during=1),
                        test_two=COUNTED.format(name="two", during=1))
    # (a fresh process: torch's count there is its default, whatever this one runs on)
    result = pytester.runpytest_subprocess("-n", "2")
    result.assert_outcomes(passed=2)


@needs_cores
def test_without_xdist_a_check_keeps_torchs_count(pytester, monkeypatch):
    # (as in a pytest started by a test of an xdist worker: its variables are inherited,
    # and that pytest runs alone all the same)
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    pytester.makepyfile(test_one=COUNTED.format(name="one", during="torch.get_num_threads()"))
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1)
