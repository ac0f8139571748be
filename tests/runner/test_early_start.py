"""The command line's start-up (bench/cli_startup.md): ``adcheck check`` of
torch code forks its workers from the process that has imported torch with
the user's file (``runner.pool.WorkerPool.forking_here``), so torch is
imported once, and a crash in the code under check is still that check's
error."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from adcheck.cli.runs import uses_torch

REPO = Path(__file__).resolve().parents[2]
MAIN = "import sys; from adcheck.cli.main import main; sys.argv[0] = 'adcheck'; main()"

#: a torch Function whose backward is right only in a worker forked from the
#: process that imported this file (a worker that imports it again, as a fork
#: server's does, gets a wrong factor)
FORKED_PROBE = '''
import os
import torch

IMPORTED_IN = os.getpid()


class Doubled(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return 2 * x

    @staticmethod
    def backward(ctx, grad):
        return grad * (2 if os.getppid() == IMPORTED_IN else 5)
'''

#: a torch Function whose backward ends its process
DYING = '''
import os
import torch


class Dying(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return 2 * x

    @staticmethod
    def backward(ctx, grad):
        os._exit(3)
'''


@pytest.mark.parametrize("target, engine, expected", [
    ("layer.py:Layer", "refengine", True),
    ("pkg.layer:Layer", "refengine", True),
    ("plain.py:square", "refengine", False),
    ("plain.py:square", "torch", True),
    ("missing.py:Layer", "refengine", False),
    ("layer.py", "refengine", False),
    (None, "refengine", False),
])
def test_torch_code_is_read_from_the_files_text(tmp_path, monkeypatch, target, engine, expected):
    (tmp_path / "layer.py").write_text("import math\nfrom torch import nn\n\nclass Layer: ...\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "layer.py").write_text("import torch.nn as nn\n")
    (tmp_path / "plain.py").write_text("# mentions torch but does not import it\n"
                                       "def square(x):\n    return x * x  # import torch\n")
    monkeypatch.chdir(tmp_path)
    assert uses_torch(target, engine) is expected


def _python(code: str, cwd: Path, *args, **env) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO), **env)
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def _check(tmp_path, target: str, **env) -> tuple:
    done = _python(MAIN, tmp_path, "check", target, "--inputs", "randn(3, 2)", "--check",
                   "reverse", "--no-explore", "--format", "json", **env)
    return done.returncode, json.loads(done.stdout) if done.stdout else done.stderr


def test_the_worker_of_a_torch_check_is_a_fork_of_the_command(tmp_path):
    pytest.importorskip("torch")
    (tmp_path / "forked.py").write_text(FORKED_PROBE)
    status, report = _check(tmp_path, "forked.py:Doubled")
    assert status == 0, report
    assert [r["status"] for r in report["results"]] == ["passed"]
    # the control: more threads than one asked for, the workers come from the fork
    # server, import the file again, and the planted factor shows
    status, report = _check(tmp_path, "forked.py:Doubled", OMP_NUM_THREADS="2")
    assert status == 1, report
    assert [r["status"] for r in report["results"]] == ["failed"]


AFTER_A_FORKED_RUN = textwrap.dedent('''
    from adcheck.cli.main import cli
    from adcheck.runner.pool import shared_pool

    if __name__ == "__main__":
        try:
            cli.main(["check", "forked.py:Doubled", "--inputs", "randn(3, 2)", "--check",
                      "reverse", "--no-explore", "-q"], standalone_mode=False)
        except SystemExit:
            pass
        pool = shared_pool()
        print(pool.context.get_start_method(), len(pool.workers))
''')


def test_after_a_forked_run_the_workers_come_from_the_fork_server_again(tmp_path):
    # a later run in the same process (the pytest plugin's, a test's) must not
    # fork this process's state of the moment
    pytest.importorskip("torch")
    (tmp_path / "forked.py").write_text(FORKED_PROBE)
    done = _python(AFTER_A_FORKED_RUN, tmp_path)
    assert done.stdout.split()[-2:] == ["forkserver", "0"], done.stdout + done.stderr
    assert "1 passed" in done.stdout + done.stderr     # the run was forked from here


def test_a_crash_in_a_forked_worker_is_the_checks_error(tmp_path):
    pytest.importorskip("torch")
    (tmp_path / "dying.py").write_text(DYING)
    status, report = _check(tmp_path, "dying.py:Dying")
    assert status == 1, report
    [result] = report["results"]
    assert result["status"] == "error"
    assert "exited with status 3" in result["message"], result["message"]


#: a program that runs a reentrant torch backward nested deeper than torch's limit
#: (its autograd engine then starts threads of its own, and refuses any backward
#: in a fork of this process), then the command line in the same process
AFTER_A_THREADED_BACKWARD = textwrap.dedent('''
    import json, sys
    import torch
    from adcheck.cli.main import cli
    from adcheck.runner.pool import torch_backward_forks

    class Deep(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, depth):
            ctx.depth = depth
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            if ctx.depth > 0:
                with torch.enable_grad():
                    y = torch.zeros(2, requires_grad=True)
                    Deep.apply(y, ctx.depth - 1).sum().backward()
            return grad, None

    before = torch_backward_forks()
    if sys.argv[1] == "deep":
        Deep.apply(torch.zeros(2, requires_grad=True), 70).sum().backward()
    after = torch_backward_forks()
    try:
        cli.main(["check", "plain.py:square", "--engine", "torch", "--inputs", "randn(3, 2)",
                  "--check", "reverse", "--no-explore", "--format", "json"],
                 standalone_mode=False)
    except SystemExit:
        pass
    print(json.dumps([before, after]))
''')


@pytest.mark.parametrize("first", ["deep", "shallow"])
def test_after_a_threaded_backward_the_workers_are_not_forks_of_this_process(tmp_path, first):
    pytest.importorskip("torch")
    (tmp_path / "plain.py").write_text("def square(x):\n    return x * x\n")
    done = _python(AFTER_A_THREADED_BACKWARD, tmp_path, first)
    *report, probes = done.stdout.strip().split("\n")   # (the JSON report, then the probes)
    assert json.loads(probes) == [True, first == "shallow"], done.stderr
    # a fork of the process would have reported the check as an error (torch's refusal)
    results = json.loads("\n".join(report))["results"]
    assert [r["status"] for r in results] == ["passed"], done.stdout


def test_the_command_itself_forks_its_workers_without_the_probe(tmp_path):
    # (the adcheck command has run no backward before its workers: the probe's
    # fork, whose first backward a worker would pay again, is left out there)
    pytest.importorskip("torch")
    (tmp_path / "forked.py").write_text(FORKED_PROBE)
    refuse = ("import adcheck.runner.pool as pool\n"
              "def probed():\n    raise SystemExit('probed')\n"
              "pool.torch_backward_forks = probed\n")
    done = _python(refuse + MAIN, tmp_path, "check", "forked.py:Doubled", "--inputs",
                   "randn(3, 2)", "--check", "reverse", "--no-explore", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert [r["status"] for r in json.loads(done.stdout)["results"]] == ["passed"]
