"""adcheck check FILE:OBJ --harvest: the example model's two wrong Functions
named by their module paths; the bad inputs exit as documented."""
from __future__ import annotations

import importlib.util
import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from adcheck.cli.main import cli

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                reason="PyTorch is not installed: examples/harvest_model.py "
                                "and the models here are torch code")

MODEL = f"{Path(__file__).resolve().parents[2] / 'examples' / 'harvest_model.py'}:Model"


@pytest.fixture
def run():
    def invoke(*args):
        return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    return invoke


def test_the_example_model_fails_naming_exactly_the_two_wrong_functions(run):
    result = run("check", MODEL, "--harvest", "--format", "json")
    assert result.exit_code == 1, result.output
    document = json.loads(result.stdout)
    failing = {r["op"] for r in document["results"] if r["status"] == "failed"}
    assert failing == {"norm_f:ScaleNormFn", "temp:TemperatureFn", "Model"}
    passed = {r["op"] for r in document["results"] if r["status"] == "passed"}
    assert "blocks.1.mlp.act:GeluTanhFn" in passed and len(passed) == 10
    (model,) = [r for r in document["results"] if r["op"] == "Model"]
    assert model["message"].startswith("the whole model fails; at fault on their own: "
                                       "norm_f:ScaleNormFn, temp:TemperatureFn")
    assert model["escape"]                 # probed: the odds stated
    forward = [r for r in document["results"] if r["op"] == "blocks.0.mlp.act:GeluTanhFn"
               and r["check"] == "forward"]
    assert forward[0]["status"] == "passed"        # it has a jvp: forward mode checked too


def test_torch_tolerances_let_the_small_error_through(run):
    # the 1e-3 error is what a fixed rtol of 1e-3 passes: only the precise check sees it
    result = run("check", MODEL, "--harvest", "--torch-tolerances", "--check", "reverse",
                 "--format", "json")
    failing = {r["op"] for r in json.loads(result.stdout)["results"] if r["status"] == "failed"}
    assert "temp:TemperatureFn" in failing and "norm_f:ScaleNormFn" not in failing


def test_jobs_with_harvest_is_said_to_be_unused_and_changes_no_verdict(run):
    alone = run("check", MODEL, "--harvest", "--check", "reverse", "--format", "json")
    jobs = run("check", MODEL, "--harvest", "--check", "reverse", "--format", "json", "-j", "2")
    assert "--jobs 2 is not used with --harvest" in jobs.stderr
    assert "--jobs" not in alone.stderr
    assert jobs.exit_code == alone.exit_code == 1
    statuses = [{(r["op"], r["status"]) for r in json.loads(result.stdout)["results"]}
                for result in (alone, jobs)]
    assert statuses[0] == statuses[1]


def test_inputs_from_the_command_line(run):
    result = run("check", MODEL, "--harvest", "--inputs", "randn(3, 8) float32",
                 "--check", "reverse", "--format", "json")
    shapes = {r["op"]: r["sample_name"] for r in json.loads(result.stdout)["results"]}
    assert shapes["blocks.0.attn:AttnSoftmaxFn"] == "(2, 3, 3)"


def test_a_model_without_custom_functions_checks_nothing_and_exits_3(run, tmp_path):
    path = tmp_path / "plain.py"
    path.write_text(textwrap.dedent("""
        import torch
        def make():
            return torch.nn.Linear(3, 2)
        def example_inputs():
            return torch.randn(4, 3)
    """))
    result = run("check", f"{path}:make", "--harvest")
    assert result.exit_code == 3, result.output
    assert "applied no custom Function" in result.output


def test_no_inputs_and_no_example_inputs_is_a_usage_error(run, tmp_path):
    # (a model with no layer whose shapes tell its inputs: a Linear's would be
    # taken, tests/cli/test_check_layer_inputs.py)
    path = tmp_path / "bare.py"
    path.write_text("import torch\nclass Twice(torch.nn.Module):\n"
                    "    def forward(self, x):\n        return 2 * x\nmake = Twice\n")
    result = run("check", f"{path}:make", "--harvest")
    assert result.exit_code == 2
    assert "define example_inputs()" in result.output


def test_a_forward_that_raises_is_an_error_naming_the_module(run, tmp_path):
    path = tmp_path / "broken.py"
    path.write_text(textwrap.dedent("""
        import torch
        class Bad(torch.nn.Module):
            def forward(self, x):
                raise ValueError("no such head")
        def make():
            return torch.nn.Sequential(torch.nn.Linear(3, 3), Bad())
        def example_inputs():
            return torch.randn(4, 3)
    """))
    result = run("check", f"{path}:make", "--harvest")
    assert result.exit_code == 1
    assert "ValueError: no such head (in 1)" in result.output


@pytest.mark.parametrize("layer", ["Linear(3, 3)", "Conv1d(3, 3, 1)", "LayerNorm(3)"])
def test_inputs_of_another_dtype_than_the_model_are_a_usage_error(run, tmp_path, layer):
    # --inputs makes float64 unless told; a float32 model's layers refuse it, each in
    # its own words: the user's input, said with the fix (an exit 1 "error" before)
    path = tmp_path / "float32_model.py"
    path.write_text(f"import torch\ndef make():\n    return torch.nn.{layer}\n")
    result = run("check", f"{path}:make", "--harvest", "--inputs", "randn(2, 3, 3)")
    assert result.exit_code == 2, result.output
    assert "--inputs gave float64 tensors and the model's parameters are float32" in \
        result.output
    assert "'randn(3, 5) float32'" in result.output
    fixed = run("check", f"{path}:make", "--harvest", "--inputs", "randn(2, 3, 3) float32")
    assert fixed.exit_code == 3, fixed.output     # runs now (and applies no Function)
