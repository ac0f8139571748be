"""`adcheck check FILE:Function` and `--harvest` on a Function whose own vmap
staticmethod is wrong (examples/vmap_rules.py's Gate): both said green (exit
0) before; the rule is now checked against one call per example and its
failure names the layout."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from click.testing import CliRunner  # noqa: E402

from adcheck.cli.main import cli  # noqa: E402

#: the example's two Functions (examples/vmap_rules.py), and models applying them
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "vmap_rules.py"
SOURCE = f'''
import importlib.util
import torch

_spec = importlib.util.spec_from_file_location("vmap_rules_example", {str(EXAMPLE)!r})
_example = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_example)
Gate, RightGate = _example.Gate, _example.RightGate


class Net(torch.nn.Module):
    def __init__(self, function):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.w = torch.nn.Parameter(torch.randn(4))
        self.function = function

    def forward(self, x):
        return self.function.apply(self.lin(x), self.w).sum()


def wrong():
    return Net(Gate)


def right():
    return Net(RightGate)


def example_inputs():
    return torch.randn(3, 4)
'''


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "gates.py"
    path.write_text(SOURCE)
    return path


def _run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def test_a_function_with_a_wrong_rule_fails(source):
    result = _run("check", f"{source}:Gate", "--inputs", "randn(3, 4); randn(4)", "--check",
                  "reverse", "-q")
    assert result.exit_code == 1, result.output
    assert "Gate: its own vmap rule differs from one call per example" in result.output
    assert "Gate.vmap must move each batched argument's dimension" in result.output


def test_a_function_with_a_right_rule_passes(source):
    result = _run("check", f"{source}:RightGate", "--inputs", "randn(3, 4); randn(4)",
                  "--check", "reverse", "-q")
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("factory, status", [("wrong", "failed"), ("right", "passed")])
def test_a_harvested_function_has_its_rule_checked(source, factory, status):
    result = _run("check", f"{source}:{factory}", "--harvest", "--check", "reverse",
                  "--format", "json")
    assert result.exit_code == (1 if status == "failed" else 0), result.output
    (found,) = [r for r in json.loads(result.stdout)["results"]
                if r["op"].endswith("Gate") and r["check"] == "reverse"]
    assert found["status"] == status
    if status == "failed":
        assert "own vmap rule" in found["message"]
