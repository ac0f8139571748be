"""``adcheck check FILE:OBJ`` at the inputs ``example_inputs()`` in FILE returns.

An object whose inputs must lie in a domain no ``--inputs`` constructor
makes (rows of probabilities, a symmetric positive definite matrix) could
not be checked from the command line: every default set raised ("runs on
none of the default inputs ... give --inputs"), and ``--inputs`` has no
softmax. ``--harvest`` already took ``example_inputs()``; ``check`` now does
too (with no ``--inputs``, or as ``--inputs 'example_inputs()'`` beside other
sets), and the verdicts are those of ``gradcheck.check`` on the same tensors."""
from __future__ import annotations

import pytest

from adcheck import runner
from adcheck.runner.reproduction import reproducer

torch = pytest.importorskip("torch", reason="torch Functions (pip install torch)")

SIMPLEX = '''
import torch


class Entropy(torch.autograd.Function):
    """-sum p log p of probability rows; refuses rows that do not sum to one."""

    @staticmethod
    def forward(p):
        if (p.sum(-1) - 1).abs().max() > 1e-3:
            raise ValueError("each row must sum to 1")
        return -(p * p.log()).sum(-1)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, g):
        (p,) = ctx.saved_tensors
        return -g.unsqueeze(-1) * (p.log() + SLOPE)


SLOPE = 1.0


def example_inputs():
    torch.manual_seed(0)
    return torch.softmax(torch.randn(3, 4, dtype=torch.float64), -1)
'''


@pytest.fixture
def simplex(tmp_path):
    def write(slope=1.0, example=None):
        text = SIMPLEX.replace("SLOPE = 1.0", f"SLOPE = {slope}")
        if example is not None:
            text = text.split("def example_inputs")[0] + example
        path = tmp_path / f"simplex_{abs(hash((slope, example)))}.py"
        path.write_text(text)
        return path
    return write


def test_without_example_inputs_no_default_set_runs(run, simplex):
    path = simplex(example="")
    result = run("check", f"{path}:Entropy", "--check", "reverse")
    assert result.exit_code == 2
    assert "runs on none of the default inputs" in result.stderr
    assert f"or define example_inputs() in {path} returning them" in result.stderr


def test_a_right_formula_passes_at_example_inputs(run_json, simplex):
    result, doc = run_json("check", f"{simplex()}:Entropy", "--check", "reverse")
    assert result.exit_code == 0, result.output
    assert doc["settings"]["inputs"] == ["example_inputs()"]
    assert [r["status"] for r in doc["results"]] == ["passed"]
    assert "at example_inputs() of" in result.stderr


def test_a_wrong_formula_fails_there_as_gradcheck_judges_it(run_json, simplex):
    path = simplex(slope=0.5)
    result, doc = run_json("check", f"{path}:Entropy", "--check", "reverse")
    assert result.exit_code == 1, result.output
    (failed,) = [r for r in doc["results"] if r["status"] == "failed"]
    # the same tensors, checked by torch's own gradcheck: it fails too
    rebuilt = runner.rebuild_target(f"{path}:Entropy", "example_inputs()", "reverse",
                                     index=0)
    func, inputs, _ = rebuilt
    assert not torch.autograd.gradcheck(func, inputs, raise_exception=False)
    assert "example_inputs()" in reproducer(_Result(failed), doc["settings"])
    assert not rebuilt.check().passed


def test_beside_other_sets(run_json, simplex):
    result, doc = run_json("check", f"{simplex()}:Entropy", "--check", "reverse",
                           "--inputs", "example_inputs()", "--inputs", "randn(2, 3)")
    assert result.exit_code == 1, result.output
    statuses = {r["sample"]: r["status"] for r in doc["results"]}
    assert statuses[0] == "passed"
    assert statuses[1] == "error"     # randn's rows are not probabilities
    assert "each row must sum to 1" in doc["results"][1]["message"]


@pytest.mark.parametrize("body, said", [
    ("def example_inputs():\n    raise OSError('no data file')\n",
     "example_inputs() in {file} raised OSError: no data file"),
    ("def example_inputs():\n    return [0.5, 0.5]\n",
     "example_inputs() in {file} returned float, float: return a tensor or a tuple"),
])
def test_a_bad_example_inputs_is_a_usage_error(run, simplex, body, said):
    path = simplex(example=body)
    result = run("check", f"{path}:Entropy", "--check", "reverse")
    assert result.exit_code == 2, result.output
    assert said.format(file=path) in result.stderr
    assert "Traceback" not in result.output + result.stderr


def test_none_requiring_grad_are_all_differentiated(run_json, simplex):
    body = ("def example_inputs():\n    torch.manual_seed(0)\n"
            "    return (torch.softmax(torch.randn(2, 5, dtype=torch.float64), -1),)\n")
    path = simplex(slope=0.5, example=body)
    result, doc = run_json("check", f"{path}:Entropy", "--check", "reverse")
    assert result.exit_code == 1, result.output
    (failed,) = [r for r in doc["results"] if r["status"] == "failed"]
    assert "for output 0, input 0" in failed["message"]


class _Result:
    def __init__(self, row):
        self.__dict__.update(row)
