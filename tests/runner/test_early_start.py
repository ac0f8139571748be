"""The command line's start-up overlap (bench/cli_startup.md): for a check of
torch code the workers' fork server starts first thing, with torch among its
imports, and the first worker is started from a thread, so this process goes
on while the fork server imports."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from adcheck.cli.runs import uses_torch

REPO = Path(__file__).resolve().parents[2]

#: a torch function whose derivative formula is right only in a process that had
#: torch's symbolic-shapes module before it imported this file: a worker forked
#: from a fork server that preloaded it (``runner.pool.TORCH_PRELOAD``); a plain
#: ``import torch`` does not import that module
PRELOAD_PROBE = '''
import sys
import torch

PRELOADED = "torch.fx.experimental.symbolic_shapes" in sys.modules


class Doubled(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return 2 * x

    @staticmethod
    def backward(ctx, grad):
        return grad * (2 if PRELOADED else 5)
'''


@pytest.mark.parametrize("argv, expected", [
    (["adcheck", "check", "layer.py:Layer", "--inputs", "randn(3)"], True),
    (["adcheck", "check", "--inputs", "randn(3)", "pkg.layer:Layer"], True),
    (["adcheck", "check", "plain.py:square"], False),
    (["adcheck", "check", "plain.py:square", "--engine", "torch"], True),
    (["adcheck", "check", "plain.py:square", "--engine=torch"], True),
    (["adcheck", "check", "layer.py:Layer", "--help"], False),
    (["adcheck", "ops", "layer.py:Layer"], False),
    (["adcheck", "check", "missing.py:Layer"], False),
    (["adcheck"], False),
])
def test_a_check_of_torch_code_is_read_from_the_arguments_and_the_file(tmp_path, monkeypatch,
                                                                        argv, expected):
    (tmp_path / "layer.py").write_text("import math\nfrom torch import nn\n\nclass Layer: ...\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "layer.py").write_text("import torch.nn as nn\n")
    (tmp_path / "plain.py").write_text("# mentions torch but does not import it\n"
                                       "def square(x):\n    return x * x  # import torch\n")
    monkeypatch.chdir(tmp_path)
    assert uses_torch(argv) is expected


def _python(code: str, cwd: Path, *args) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_the_worker_of_a_torch_check_inherits_the_fork_servers_torch(tmp_path):
    pytest.importorskip("torch")
    (tmp_path / "doubled.py").write_text(PRELOAD_PROBE)
    control = _python("import doubled; print(doubled.PRELOADED)", tmp_path)
    assert control.stdout.strip() == "False", control.stderr   # a plain import differs
    main = "import sys; from adcheck.cli.main import main; sys.argv[0] = 'adcheck'; main()"
    done = _python(main, tmp_path, "check", "doubled.py:Doubled", "--inputs", "randn(3)",
                   "--check", "reverse", "--no-explore", "--format", "json")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert '"passed": 1' in done.stdout


SLOW_START = textwrap.dedent('''
    import sys, time
    sys.path.insert(0, {folder!r})
    from adcheck.runner.pool import WorkerPool
    from adcheck.runner.run import _Collector
    from adcheck.runner.selection import plan, select
    from adcheck.runner.tasks import build_settings
    from toy_registry import ToyRegistry

    if __name__ == "__main__":
        pool = WorkerPool()
        pool.warm(["slow_module"])
        start = time.perf_counter()
        pool.prestart(1, wait=False)
        returned = time.perf_counter() - start
        pool.join()
        started = time.perf_counter() - start
        registry = ToyRegistry()
        tasks = plan(select(registry, ("toy_square",)).infos, None,
                     build_settings(("reverse",), registry=registry))
        collector = _Collector(tasks, False, None, None, None)
        status, _ = pool.run(tasks, 1, collector)
        print(returned, started, status, len(pool.workers),
              [r.status for s in collector.samples.values() for o in s for r in o.results])
        pool.shutdown()     # what shared_pool() registers at exit: the workers ignore SIGTERM
''')


def test_a_background_start_returns_before_the_fork_server_has_imported(tmp_path):
    # a module that takes a second to import stands for torch in the preload
    (tmp_path / "slow_module.py").write_text("import time\ntime.sleep(1.0)\n")
    code = SLOW_START.format(folder=str(Path(__file__).parent))
    done = _python(code, tmp_path)
    assert done.returncode == 0, done.stderr
    returned, started, status, workers, statuses = done.stdout.strip().split(maxsplit=4)
    assert float(returned) < 0.5 <= 1.0 <= float(started), done.stdout
    assert (status, workers, statuses) == ("done", "1", "['passed', 'passed']")
