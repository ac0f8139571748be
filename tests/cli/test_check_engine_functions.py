"""``adcheck check`` of an engine's own functions, as a newcomer tries first:
``torch:sin``, ``torch.nn.functional:gelu``, ``adcheck.refengine:sin``.

They exited 2: torch's compiled functions and refengine's ops have no
signature Python reads (``(*args, **kwargs)``), so "cannot tell how many
inputs"; given ``--inputs``, torch's ran on refengine tensors (the default
engine of a plain function) and failed with "must be Tensor, not Tensor",
"make it run on refengine tensors". A function defined in torch is now
checked on torch and one of refengine's on refengine, their inputs counted
from refengine's op definitions and from the signature line of torch's
docstrings."""
from __future__ import annotations

import inspect
import re

import numpy as np
import pytest

from adcheck import refengine as E
from adcheck.runner.target import resolve


def test_refengine_functions_have_their_op_signature():
    assert list(inspect.signature(E.add).parameters) == ["self", "other", "alpha"]
    x, y = E.tensor(np.arange(3.0)), E.tensor(np.ones(3))
    # (the names the signature gives are those the call binds)
    np.testing.assert_array_equal(E.add(self=x, other=y, alpha=2).numpy(), [2.0, 3.0, 4.0])


def test_a_refengine_function_is_checked_on_its_default_inputs(run):
    result = run("check", "adcheck.refengine:sin", "-q")
    assert result.exit_code == 0, result.output
    assert "6 passed" in result.stdout


def test_a_refengine_function_taking_dim_says_to_give_it_with_args(run):
    result = run("check", "adcheck.refengine:cumsum", "-q")
    assert result.exit_code == 2
    assert "cumsum takes dim" in result.output and "--args 'dim=-1'" in result.output
    assert run("check", "adcheck.refengine:cumsum", "--args", "dim=-1", "-q").exit_code == 0


def test_a_users_function_still_needs_its_engine_told(run, tmp_path):
    path = tmp_path / "mine.py"
    path.write_text("import torch\n\ndef swish(x):\n    return x * torch.sigmoid(x)\n")
    pytest.importorskip("torch", reason="the function calls torch (pip install torch)")
    result = run("check", f"{path}:swish", "-q")
    assert result.exit_code == 2
    assert "add --engine torch" in result.output


UNSIGNED = """
def pair(*tensors):
    x, w = tensors      # (exactly two: its signature does not say so)
    return x * w.sin()


def softmax_of(*args):
    import adcheck.refengine as E
    return E.softmax(args[0], dim=args[1])
"""


def test_an_object_whose_signature_does_not_tell_is_tried_with_one_to_three_inputs(
        run_json, tmp_path):
    path = tmp_path / "unsigned.py"
    path.write_text(UNSIGNED)
    result, doc = run_json("check", f"{path}:pair", "--check", "reverse")
    assert result.exit_code == 0, result.output
    assert {len(r["sample_name"].split(";")) for r in doc["results"]} == {2}


def test_when_none_of_them_runs_it_exits_2_saying_what_each_raised(run, tmp_path):
    path = tmp_path / "unsigned.py"
    path.write_text(UNSIGNED)
    result = run("check", f"{path}:softmax_of", "-q")
    assert result.exit_code == 2
    assert "runs on none of 1 to 3 inputs" in result.output and "--inputs" in result.output


class TestTorchFunctions:
    @pytest.fixture(autouse=True)
    def _torch(self):
        pytest.importorskip("torch", reason="torch's own functions (pip install torch)")

    @pytest.mark.parametrize("spec, inputs", [
        ("torch:sin", ("input",)), ("torch.nn.functional:gelu", ("input",)),
        ("torch:atan2", ("input", "other")), ("torch.nn.functional:conv2d", ("input", "weight")),
        ("torch:Tensor.sin", ("self",)), ("torch:cumsum", ("input", "dim"))])
    def test_their_inputs_are_read_from_the_docstring(self, spec, inputs):
        target = resolve(spec)
        assert target.engine == "torch" and target.params == inputs

    def test_torch_sin_is_checked_on_torch_without_being_told(self, run_json):
        result, doc = run_json("check", "torch:sin")
        assert result.exit_code == 0, result.output
        assert doc["settings"]["engine"] == "torch"
        assert {r["status"] for r in doc["results"]} == {"passed"}
        assert len(doc["results"]) == 6      # (3 checks on the real and the complex set)

    def test_a_function_of_torch_nn_functional_too(self, run):
        result = run("check", "torch.nn.functional:gelu", "-q")
        assert result.exit_code == 0, result.output

    def test_a_compiled_function_is_named_as_asked(self, run_json):
        result, doc = run_json("check", "torch.linalg:det", "--inputs", "randn(3, 3)",
                               "--check", "reverse")
        assert result.exit_code == 0, result.output
        assert {r["op"] for r in doc["results"]} == {"det"}

    def test_torch_relu_without_docstring_is_tried_with_one_input(self, run):
        result = run("check", "torch:relu", "--check", "reverse", "-q")
        assert result.exit_code == 0, result.output

    def test_an_option_named_by_the_refusals_is_said_to_go_with_args(self, run):
        # (torch.log_softmax has no docstring: its dim is named by what it raised)
        result = run("check", "torch:log_softmax", "-q")
        assert result.exit_code == 2
        assert "log_softmax takes dim" in result.output and "--args 'dim=-1'" in result.output
        given = run("check", "torch:log_softmax", "--args", "dim=-1", "--check", "reverse", "-q")
        assert given.exit_code == 0, given.output

    def test_torch_cumsum_says_to_give_dim_with_args(self, run):
        result = run("check", "torch:cumsum", "-q")
        assert result.exit_code == 2
        assert "--args 'dim=-1'" in result.output
        assert run("check", "torch:cumsum", "--args", "dim=-1", "-q").exit_code == 0

    @pytest.mark.parametrize("spec", ["torch.nn.functional:layer_norm", "torch:reshape",
                                      "torch:flip", "torch:roll", "torch:topk"])
    def test_the_args_it_suggests_run(self, run, spec):
        # layer_norm was told 'normalized_shape=(1,)', which its default inputs refuse
        refused = run("check", spec, "--check", "reverse", "-q")
        assert refused.exit_code == 2
        (args,) = re.findall(r"--args '([^']+)'", refused.output)
        given = run("check", spec, "--args", args, "--check", "reverse", "-q")
        assert given.exit_code == 0, (args, given.output)


def test_a_function_of_square_matrices_gets_square_default_inputs(run_json):
    # (every default set is 3 x 4: a determinant refused them all, and the command
    # exited 2 before; now a square set is tried, and its complex twin)
    result, doc = run_json("check", "adcheck.refengine.linalg:det", "--check", "reverse")
    assert result.exit_code == 0, result.output
    assert "det takes square matrices" in result.stderr
    assert {(r["dtype"], r["status"]) for r in doc["results"]} == {
        ("float64", "passed"), ("complex128", "passed")}
    assert {r["sample_name"] for r in doc["results"]} == {"randn(4, 4)",
                                                           "randn(4, 4) complex128"}


def test_eigh_on_its_square_default_is_said_to_read_one_triangle(run):
    result = run("check", "adcheck.refengine.linalg:eigh", "--check", "reverse", "-q")
    assert result.exit_code == 1, result.output
    assert "reads only the lower triangle" in result.stdout


def test_a_jax_function_is_checked_on_jax_without_being_told(run_json):
    pytest.importorskip("jax", reason="JAX's own functions (pip install jax)")
    result, doc = run_json("check", "jax.nn:gelu", "--check", "reverse")
    assert result.exit_code == 0, result.output
    assert doc["settings"]["engine"] == "jax"
    # (JAX refuses a matrix that is not square in its own words)
    square = run_json("check", "jax.numpy.linalg:det", "--check", "reverse")[0]
    assert square.exit_code == 0 and "det takes square matrices" in square.stderr


class TestTorchOptions:
    @pytest.fixture(autouse=True)
    def _torch(self):
        pytest.importorskip("torch", reason="torch's own functions (pip install torch)")

    @pytest.mark.parametrize("spec, hint, given", [
        ("torch:topk", "--args 'k=1'", "k=2"), ("torch:flip", "--args 'dims=(1,)'", "dims=(1,)")])
    def test_an_argument_torch_says_must_be_integers_is_said_to_go_with_args(
            self, run, spec, hint, given):
        result = run("check", spec, "-q")
        assert result.exit_code == 2
        assert hint in result.output
        assert run("check", spec, "--args", given, "--check", "reverse", "-q").exit_code == 0
