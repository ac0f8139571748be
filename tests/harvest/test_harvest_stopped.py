"""``adcheck check ... --harvest`` stopped by SIGTERM (a CI job cancelled)
writes the partial report, as every other run does: the Functions checked
before the signal, ``interrupted``, exit status 143 (it wrote nothing)."""
from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                       reason="PyTorch is not installed: the model here is torch code"),
    pytest.mark.skipif(sys.platform == "win32", reason="SIGTERM is POSIX's"),
]

MODEL = textwrap.dedent('''
    import os, time, torch

    class Fast(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * g * x

    class Slow(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            with open(os.environ["SLOW_CALLS"], "a") as f:
                f.write("x")
            time.sleep(0.2)
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x.cos()

    class Model(torch.nn.Module):
        def forward(self, x):
            return Slow.apply(Fast.apply(x))

    def example_inputs():
        return torch.linspace(-1, 1, 12, dtype=torch.float64).reshape(3, 4)
''')


def test_a_stopped_harvest_writes_what_it_checked(tmp_path):
    (tmp_path / "model.py").write_text(MODEL)
    calls = tmp_path / "calls"
    calls.write_text("")
    env = {**os.environ, "SLOW_CALLS": str(calls)}
    process = subprocess.Popen(
        [sys.executable, "-c", "from adcheck.cli.main import main; main()", "check", f"{tmp_path / 'model.py'}:Model",
         "--harvest", "--check", "reverse", "--format", "json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp_path, text=True)
    deadline = time.monotonic() + 120
    # (one call records it, one tries it in double precision; a third is its check
    # running: Fast's checks have ended)
    while len(calls.read_text()) < 3 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.1)
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 143, err
    document = json.loads(out)
    assert document["interrupted"] is True
    fast = [r for r in document["results"] if r["op"] == "(root):Fast"]
    assert fast and all(r["status"] == "passed" for r in fast)
