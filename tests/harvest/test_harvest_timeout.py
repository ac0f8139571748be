"""``--timeout`` bounds each harvested Function's checks as it bounds a
target's (it was ignored under --harvest: a run went past 10 minutes with
--timeout 60, nothing printed); a Function's checks that ended before it
are kept."""
from __future__ import annotations

import importlib.util
import json
import textwrap
import time

import pytest
from click.testing import CliRunner

from adcheck.cli.main import cli

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                reason="PyTorch is not installed: the model here is torch code")

SLOW = textwrap.dedent('''
    import time, torch

    class Slow(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            time.sleep(0.05)          # (a slow solve: 20 evaluations a second)
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x.cos()

    class Model(torch.nn.Module):
        def forward(self, x):
            return Slow.apply(x)

    def example_inputs():
        return torch.linspace(-1, 1, 30, dtype=torch.float64).reshape(6, 5)
''')


def test_a_slow_harvested_function_times_out(tmp_path):
    (tmp_path / "slow.py").write_text(SLOW)
    start = time.monotonic()
    result = CliRunner().invoke(cli, ["check", f"{tmp_path / 'slow.py'}:Model", "--harvest",
                                      "--timeout", "3", "--check", "reverse", "--format",
                                      "json"], catch_exceptions=False)
    # (60 evaluations of 0.05 s for the differences alone: far beyond 3 s untimed)
    assert time.monotonic() - start < 60
    assert result.exit_code == 1, result.output
    document = json.loads(result.stdout)
    (error,) = [r for r in document["results"] if r["op"] == "(root):Slow"]
    assert error["status"] == "error" and error["message"].startswith("timed out after 3s")
