"""Worker processes start with the objects they inherit frozen (``runner.frozen``):
the fork server's after its preload, and the ``adcheck`` command's own after it
imported torch and the user's file; a program that calls the command line in
its own process keeps its objects collectable.

The time this saves is a benchmark's to measure (bench/cli_startup.md); these
tests assert where the freeze happens and where it does not."""
from __future__ import annotations

import gc
import subprocess
import sys
from types import SimpleNamespace

import pytest

from adcheck.runner.checks import Policy
from adcheck.runner.run import run_tasks
from adcheck.runner.selection import plan, select
from adcheck.runner.tasks import Settings

from toy_registry import ToyRegistry


def frozen_square(x):
    """x * x in a process that inherited frozen objects, else an error saying so."""
    if gc.get_freeze_count() == 0:
        raise RuntimeError("nothing is frozen in this worker")
    return x * x


class FreezeCheckingRegistry(ToyRegistry):
    """The toy registry whose op fails in a worker with nothing frozen."""

    def call(self, info, sample, engine: str):
        call = super().call(info, sample, engine)
        return SimpleNamespace(**{**vars(call), "func": frozen_square})


def test_the_fork_servers_workers_start_frozen():
    settings = Settings(("reverse",), Policy(), timeout=60, registry=FreezeCheckingRegistry())
    outcome = run_tasks(plan(select(settings.registry, ("toy_square",)).infos, None, settings),
                        jobs=2)
    assert outcome.status == "done"
    assert [r.status for r in outcome.results] == ["passed", "passed"], \
        [r.message for r in outcome.results]


TARGET = '''
import gc
import torch


def sine(x):
    # (called in the workers, which the command forks after its freeze)
    if gc.get_freeze_count() == 0:
        raise RuntimeError("nothing is frozen in this worker")
    return torch.sin(x)
'''


def test_the_command_freezes_before_forking_its_workers(tmp_path):
    pytest.importorskip("torch", reason="the command forks its own workers for torch code only")
    (tmp_path / "target.py").write_text(TARGET)
    command = "import sys; from adcheck.cli.main import main; sys.argv[0] = 'adcheck'; main()"
    result = subprocess.run([sys.executable, "-c", command, "check", "target.py:sine",
                             "--inputs", "randn(3)", "--check", "reverse", "-q",
                             "--engine", "torch"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout


PROGRAM = """
import gc, sys
from click.testing import CliRunner
from adcheck.cli.main import cli
result = CliRunner().invoke(cli, ["check", "target.py:sine", "--inputs", "randn(3)", "--check",
                                  "reverse", "-q", "--engine", "torch"], catch_exceptions=False)
print(result.exit_code, gc.get_freeze_count(), "jax" in sys.modules)
"""


def test_a_program_running_the_command_line_in_its_process_is_not_frozen(tmp_path):
    # (in a process of its own: one that imported JAX, as a test session may have, forks
    # no workers of its own at all, and its freeze count would say nothing)
    pytest.importorskip("torch", reason="the command forks its own workers for torch code only")
    (tmp_path / "target.py").write_text(TARGET.replace("raise RuntimeError", "print  # "))
    result = subprocess.run([sys.executable, "-c", PROGRAM], cwd=tmp_path, capture_output=True,
                            text=True, timeout=300)
    assert result.stdout.split()[-3:] == ["0", "0", "False"], result.stdout + result.stderr
