"""Each failing pair's diagnosis on its own line, never on another pair's.

The FAIL line is the first failing pair's message; the run attached the
report's first diagnosis found among all failures to it. A matrix-vector
product whose matrix gradient is off entry by entry (no pattern) and whose
vector gradient is twice the true one read "... for output 0, input 0 ...
(diagnosis: analytical is 2 times numerical ...)" (found on qpth, whose Q
line carried G's diagnosis). Each later pair's worst entries now open with
its own pair and diagnosis."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="a torch Function (pip install torch)")

SOURCE = '''
import torch


class MatVec(torch.autograd.Function):
    @staticmethod
    def forward(ctx, A, x):
        ctx.save_for_backward(A, x)
        return A @ x

    @staticmethod
    def backward(ctx, g):
        A, x = ctx.saved_tensors
        return torch.outer(g, x) * (1 + 0.1 * torch.cos(7 * A)), 2 * (A.T @ g)
'''

ARGS = ("--inputs", "randn(4, 4); randn(4)", "--check", "reverse", "--no-explore")


@pytest.fixture
def matvec(tmp_path):
    path = tmp_path / "matvec.py"
    path.write_text(SOURCE)
    return f"{path}:MatVec"


def test_torch_agrees_both_gradients_are_wrong():
    import importlib.util
    torch.manual_seed(0)
    a = torch.randn(4, 4, dtype=torch.float64, requires_grad=True)
    x = torch.randn(4, dtype=torch.float64, requires_grad=True)
    spec = importlib.util.spec_from_loader("matvec_src", loader=None)
    module = importlib.util.module_from_spec(spec)
    exec(SOURCE, module.__dict__)
    f = module.MatVec.apply
    assert not torch.autograd.gradcheck(lambda a: f(a, x.detach()), (a,), raise_exception=False)
    assert not torch.autograd.gradcheck(lambda x: f(a.detach(), x), (x,), raise_exception=False)


def test_the_first_pairs_line_carries_no_other_pairs_diagnosis(run, run_json, matvec):
    result = run("check", matvec, *ARGS)
    assert result.exit_code == 1, result.output
    (line,) = [t for t in result.output.splitlines() if t.startswith("FAIL")]
    assert "for output 0, input 0" in line
    assert "times numerical" not in line and "(diagnosis:" not in line
    assert "      output 0, input 1: analytical is 2 times numerical" in result.output
    _, doc = run_json("check", matvec, *ARGS)
    (failed,) = doc["results"]
    assert failed["diagnosis"] is None
    assert [f["in_idx"] for f in failed["failures"]] == [0, 1]
    assert "2 times numerical" in failed["failures"][1]["diagnosis"]
