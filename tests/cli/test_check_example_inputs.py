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


PLAIN = '''
import torch


def entropy(p):
    return -(p * torch.log(p)).sum(-1) * SCALE


SCALE = 1.0


def example_inputs():
    torch.manual_seed(0)
    return torch.softmax(torch.randn(3, 4, dtype=torch.float64), -1)
'''


@pytest.mark.parametrize("given", [(), ("--inputs", "example_inputs()")])
def test_a_plain_function_takes_the_engine_of_its_example_inputs(run_json, tmp_path, given):
    # a plain function of torch tensors, checked at the torch tensors of its file's
    # example_inputs(): before, "plain functions are checked on --engine refengine
    # unless told; add --engine torch" (exit 2)
    path = tmp_path / "plain_entropy.py"
    path.write_text(PLAIN)
    result, doc = run_json("check", f"{path}:entropy", "--check", "reverse", *given)
    assert result.exit_code == 0, result.output
    assert doc["settings"]["engine"] == "torch"
    assert [r["status"] for r in doc["results"]] == ["passed"]
    # a wrong one fails there, as torch's gradcheck of the same tensors does
    path.write_text(PLAIN.replace("SCALE = 1.0", "SCALE = 2.0").replace(
        "return -(p * torch.log(p)).sum(-1) * SCALE", "return Halved.apply(p)") + HALVED)
    result, doc = run_json("check", f"{path}:entropy", "--check", "reverse", *given)
    assert result.exit_code == 1, result.output
    func, inputs, _ = runner.rebuild_target(f"{path}:entropy", "example_inputs()", "reverse",
                                            index=0, engine="torch")
    assert not torch.autograd.gradcheck(func, inputs, raise_exception=False)


def test_without_example_inputs_the_hint_still_says_which_engine(run, tmp_path):
    path = tmp_path / "plain_no_example.py"
    path.write_text(PLAIN.split("def example_inputs")[0])
    result = run("check", f"{path}:entropy", "--check", "reverse")
    assert result.exit_code == 2, result.output
    assert "add --engine torch" in result.stderr


HALVED = '''

class Halved(torch.autograd.Function):
    @staticmethod
    def forward(ctx, p):
        ctx.save_for_backward(p)
        return -(p * p.log()).sum(-1)

    @staticmethod
    def backward(ctx, g):
        (p,) = ctx.saved_tensors
        return -g.unsqueeze(-1) * (p.log() + 1) / 2     # wrong: no / 2
'''


def test_the_refusal_suggests_as_many_inputs_as_the_object_takes(run, simplex):
    # Entropy takes one input: the example was three ("randn(3, 4); rand(4) + 0.1; ...")
    path = simplex(example="")
    result = run("check", f"{path}:Entropy", "--check", "reverse")
    assert result.exit_code == 2
    assert 'e.g. --inputs "randn(3, 4)", or define example_inputs()' in result.stderr


JAX_FILE = '''
import jax.numpy as jnp


def f(x):
    return jnp.sin(x) * 2


def example_inputs():
    return (jnp.linspace(-1.0, 1.0, 12).reshape(3, 4),)     # made when called, not at import
'''


@pytest.mark.parametrize("engine", [(), ("--engine", "jax")])
def test_jax_arrays_made_by_example_inputs_are_double(run_json, tmp_path, engine):
    # they were float32 (JAX's default): "example_inputs() ... raised UncheckableError: ...
    # JAX runs in 32-bit mode", exit 2, where the docs say adcheck turns 64-bit mode on
    jax = pytest.importorskip("jax", reason="JAX is not installed (pip install '.[jax]')")
    path = tmp_path / "jax_example.py"
    path.write_text(JAX_FILE)
    result, doc = run_json("check", f"{path}:f", "--check", "reverse", *engine)
    assert result.exit_code == 0, result.output
    assert doc["settings"]["engine"] == "jax" and jax.config.jax_enable_x64
    assert [r["status"] for r in doc["results"]] == ["passed"]
