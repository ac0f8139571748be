"""``--harvest`` shows a warning of the code under check once, as ``adcheck check``
does: a custom Function that warns in its forward warns at every evaluation
of every check (xitorch's ConvergenceWarning printed some 70 times, each as
two raw lines of Python's, where ``check`` printed one "warning:" line)."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                reason="PyTorch is not installed: the model is torch code")

MODEL = '''
import os
import warnings
import torch


class ConvergenceWarning(UserWarning):
    pass


class Solve(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        with open(os.environ["FORWARDS"], "a") as log:   # (how often it warned)
            log.write("1")
        warnings.warn("the solver did not converge in 5 iterations", ConvergenceWarning)
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return 2 * g * x


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        return Solve.apply(self.lin(x))


def solve(x):
    return Solve.apply(x)
'''

WORDS = "ConvergenceWarning: the solver did not converge in 5 iterations"


def _adcheck(tmp_path, *args):
    env = {**os.environ, "FORWARDS": str(tmp_path / "forwards.log")}
    return subprocess.run([sys.executable, "-c", "from adcheck.cli.main import main; main()",
                           *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600, check=False)


def test_a_functions_warning_is_shown_once_as_check_shows_it(tmp_path):
    (tmp_path / "solver.py").write_text(MODEL)
    harvested = _adcheck(tmp_path, "check", "solver.py:Model", "--harvest",
                         "--inputs", "randn(2, 3) float32", "-q")
    assert harvested.returncode == 0, harvested.stdout + harvested.stderr
    assert len((tmp_path / "forwards.log").read_text()) > 2     # it warned again and again
    mentions = [line for line in harvested.stderr.splitlines() if "did not converge" in line]
    assert mentions == [f"warning: {WORDS} (first seen on solver.py:Model)"]
    checked = _adcheck(tmp_path, "check", "solver.py:solve", "--engine", "torch",
                       "--inputs", "randn(2, 3)", "-q")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"warning: {WORDS} (first seen on solver.py:solve)" in checked.stderr.splitlines()
