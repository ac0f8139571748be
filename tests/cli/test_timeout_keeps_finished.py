"""A target whose last check runs past ``--timeout``: the checks that ended
before it are kept. The worker's deadline stopped the whole task, and its
results went with it: jaxopt's unconverged ridge solve showed "0 passed,
0 failed" and one "setup" error after 300 s, though its reverse check had
failed after 19 s (a wrong formula found, then thrown away)."""
from __future__ import annotations

import pytest

pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

SLOW_SECOND_ORDER = '''
import time
import torch


class Wrong(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        if torch.is_grad_enabled():      # building a graph: the second-order check
            time.sleep(0.5)
        return 3 * x * g                 # wrong: 2 x
'''


#: seconds: the reverse and forward checks end in well under one on an idle machine
#: (a 3 s timeout failed once under the full suite's load); the second-order check
#: builds its graph some 150 times, 75 s of sleeping
TIMEOUT = 8


def test_a_timeout_keeps_the_checks_that_ended(run_json, tmp_path):
    path = tmp_path / "slow_second_order.py"
    path.write_text(SLOW_SECOND_ORDER)
    result, doc = run_json("check", f"{path}:Wrong", "--inputs", "randn(3, 4)",
                           "--timeout", str(TIMEOUT))
    assert result.exit_code == 1, result.output
    statuses = {r["check"]: r["status"] for r in doc["results"]}
    assert statuses["reverse"] == "failed"          # found before the timeout, and kept
    assert statuses["forward"] == "skipped"         # (no jvp)
    (error,) = [r for r in doc["results"] if r["status"] == "error"]
    assert f"timed out after {TIMEOUT}s in the gradgrad check" in error["message"]
    assert "2 checks ended before it, kept above" in error["message"]
