"""adcheck check: a user's Function or function, and OpInfos from a plugin file."""
import importlib.util

import pytest
from cli_paths import USER_FUNCTIONS, WRONG_OPS


def test_a_correct_function_with_jvp_passes_both_modes(run_json):
    result, doc = run_json("check", f"{USER_FUNCTIONS}:GoodExp", "--inputs", "randn(2, 3)")
    assert result.exit_code == 0
    # second order too by default: GoodExp's backward is differentiable
    assert [(r["check"], r["status"]) for r in doc["results"]] == [
        ("reverse", "passed"), ("forward", "passed"), ("gradgrad", "passed")]
    assert doc["command"] == "check" and doc["settings"]["kind"] == "refengine Function"


def test_a_wrong_function_exits_1_with_the_factor_diagnosis(run):
    result = run("check", f"{USER_FUNCTIONS}:DoubledSin")
    assert result.exit_code == 1
    assert "analytical is 2 times numerical" in result.stdout
    assert "a constant factor in the vjp is off" in result.stdout


def test_a_missing_conjugate_is_diagnosed_as_such(run_json):
    result, doc = run_json("check", f"{USER_FUNCTIONS}:UnconjugatedSquare",
                           "--inputs", "randn(3) complex128")
    assert result.exit_code == 1
    (reverse,) = [r for r in doc["results"] if r["check"] == "reverse"]
    assert "conjugate" in reverse["diagnosis"]


def test_the_same_function_is_right_on_real_inputs(run):
    assert run("check", f"{USER_FUNCTIONS}:UnconjugatedSquare", "--inputs",
               "randn(3)").exit_code == 0


def test_a_function_without_jvp_skips_forward_with_the_reason(run_json):
    _, doc = run_json("check", f"{USER_FUNCTIONS}:DoubledSin", "--check", "reverse,forward",
                      "--inputs", "randn(3)")
    (forward,) = [r for r in doc["results"] if r["check"] == "forward"]
    assert forward["status"] == "skipped" and "defines no jvp" in forward["message"]


def test_a_plain_function_gets_one_input_set_per_inputs_option(run_json):
    result, doc = run_json("check", f"{USER_FUNCTIONS}:scaled_sum",
                           "--inputs", "randn(2, 3); rand(3) + 1",
                           "--inputs", "randn(2) complex128; randn(2) complex128")
    assert result.exit_code == 0
    assert sorted({r["sample"] for r in doc["results"]}) == [0, 1]
    assert {r["dtype"] for r in doc["results"]} == {"float64", "complex128"}


def test_default_inputs_follow_the_signature_with_rows_broadcast_and_complex(run_json):
    _, doc = run_json("check", f"{USER_FUNCTIONS}:scaled_sum")
    assert doc["settings"]["inputs"] == ["randn(3, 4); randn(3, 4)", "randn(3, 4); randn(4)",
                                         "randn(3, 4) complex128; randn(3, 4) complex128"]


def test_a_dotted_module_path_is_imported_from_the_current_directory(run, monkeypatch):
    from cli_paths import FIXTURES
    monkeypatch.chdir(FIXTURES)
    result = run("check", "user_functions:DoubledSin", "-q")
    assert result.exit_code == 1 and "2 times numerical" in result.stdout


def test_a_plugin_file_is_checked_with_its_own_samples(run_json):
    result, doc = run_json("check", "--plugin", WRONG_OPS, "--check", "reverse")
    assert result.exit_code == 1
    assert {r["op"] for r in doc["results"]} == {"cli_doubled_sin", "cli_square"}
    assert doc["settings"]["target"] == WRONG_OPS


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")
def test_a_wrong_torch_function_is_checked_on_torch(run_json, tmp_path):
    module = tmp_path / "torch_fn.py"
    module.write_text(
        "import torch\n"
        "class Cube(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, x):\n"
        "        ctx.save_for_backward(x)\n"
        "        return x ** 3\n"
        "    @staticmethod\n"
        "    def backward(ctx, g):\n"
        "        (x,) = ctx.saved_tensors\n"
        "        return -3 * g * x ** 2\n")
    result, doc = run_json("check", f"{module}:Cube", "--inputs", "randn(4)")
    assert result.exit_code == 1
    assert doc["settings"]["engine"] == "torch" and doc["settings"]["kind"] == "torch Function"
    assert "sign" in doc["results"][0]["diagnosis"]


def test_a_plugin_may_import_modules_next_to_it(run_json, tmp_path):
    (tmp_path / "helpers_for_cli_plugin.py").write_text(
        "import adcheck.refengine as E\n"
        "def cube(x):\n"
        "    return x * x * x\n")
    (tmp_path / "sibling_plugin.py").write_text(
        "import adcheck.refengine as E\n"
        "from adcheck.opinfo import OpInfo\n"
        "from adcheck.opinfo.samples import unary\n"
        "from helpers_for_cli_plugin import cube\n"
        "OPINFOS = [OpInfo('cli_cube', cube, family='cli_sibling', dtypes=(E.float64,),\n"
        "                  sample_func=unary(shapes=((3,),)))]\n")
    result, doc = run_json("check", "--plugin", tmp_path / "sibling_plugin.py",
                           "--check", "reverse,forward")
    assert result.exit_code == 0, result.stderr
    assert {(r["op"], r["status"]) for r in doc["results"]} == {("cli_cube", "passed")}


def test_a_timeout_in_a_user_function_is_an_error_not_a_hang(run_json, tmp_path):
    (tmp_path / "sleepy.py").write_text(
        "import time\n"
        "def f(x):\n"
        "    time.sleep(30)\n"
        "    return x\n")
    result, doc = run_json("check", f"{tmp_path / 'sleepy.py'}:f", "--timeout", "0.5")
    assert result.exit_code == 1
    (error,) = doc["results"]
    assert error["status"] == "error" and "timed out after 0.5s" in error["message"]
