"""``adcheck check`` of a module whose data batch does not require grad, and whose
Function gives the parameter's gradient only when the batch needs one: it
passed (exit 0); each input alone requiring grad fails it (``verdict.alone``;
tests/gradcheck/test_inputs_alone.py has the independent evidence)."""
from __future__ import annotations

import pytest

pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")


def test_a_module_checked_from_the_command_line(run, tmp_path):
    path = tmp_path / "gated_model.py"
    path.write_text('''
import torch


class GatedAdd(torch.autograd.Function):
    @staticmethod
    def forward(ctx, low, high):
        return low + 2 * high

    @staticmethod
    def backward(ctx, g):
        dl = dh = None
        if ctx.needs_input_grad[0]:
            dl, dh = g, 2 * g
        return dl, dh


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64))

    def forward(self, x):
        return GatedAdd.apply(x, x * self.w)


def example_inputs():
    torch.manual_seed(0)
    return torch.randn(2, 3, dtype=torch.float64)      # a data batch
''')
    result = run("check", f"{path}:Model", "--check", "reverse")
    assert result.exit_code == 1, result.output
    assert "differs when it alone requires grad for input 1 (w)" in result.output
