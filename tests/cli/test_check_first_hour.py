"""adcheck check in a new user's first hour (issue 28, items 4, 5 and 6): what
is wrong shown in the tensors' own indices, wrappers, keyword arguments,
index tensors, the --engine jax hint, and default inputs that can show
row-wise, broadcast and complex bugs."""
import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest
from cli_paths import FIXTURES

#: the examples of docs/check.md: right and wrong Functions of a new user's first hour
FIRST_HOUR = str(Path(__file__).resolve().parents[2] / "examples" / "first_hour.py")
HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_JAX = importlib.util.find_spec("jax") is not None

PART = r"\[[^\]]*\](?:\.re|\.im)?"
ENTRY = re.compile(rf"output 0 ({PART}) by input (\d) ({PART}): "
                   r"reverse (\S+), numerical (\S+) \(error")


# ----- item 4: the worst entries in the tensors' own indices ----------------------------

def test_a_failure_names_its_worst_entries_by_output_and_input_index(run):
    result = run("check", f"{FIRST_HOUR}:ScaledWeightGrad", "--inputs", "randn(4, 5); randn(4, 5)",
                 "--check", "reverse")
    assert result.exit_code == 1
    # d(x * w)/dw is diagonal: 20 of its 20 x 20 entries are wrong, each by the factor 1.5
    assert "20 of 400 entries differ" in result.stdout
    entries = ENTRY.findall(result.stdout)
    assert len(entries) == 3
    for out_index, in_idx, in_index, analytical, numerical in entries:
        assert in_idx == "1" and out_index == in_index and in_index.count(",") == 1
        assert float(analytical) == pytest.approx(1.5 * float(numerical), rel=1e-5)
    assert "[17, 17]" not in result.stdout.split("entries differ")[1]


def test_complex_outputs_are_named_by_their_real_and_imaginary_parts(run):
    result = run("check", f"{FIXTURES / 'user_functions.py'}:UnconjugatedSquare",
                 "--inputs", "randn(2, 3) complex128", "--check", "reverse")
    assert result.exit_code == 1
    entries = re.findall(r"output 0 \[(\d), (\d)\]\.(re|im) by input 0 \[(\d), (\d)\]: "
                         r"reverse (\S+), numerical (\S+) \(", result.stdout)
    assert entries
    for o0, o1, _, i0, i1, analytical, numerical in entries:
        assert (o0, o1) == (i0, i1)      # z * z: each output element depends on its own z
        # the vjp gives 2z where 2 conj(z) is right: the same modulus, another phase
        assert abs(complex(analytical)) == pytest.approx(abs(complex(numerical)), rel=1e-5)
        assert complex(analytical) != pytest.approx(complex(numerical), rel=1e-3)


def test_verbose_shows_the_worst_block_of_both_jacobians(run):
    result = run("check", f"{FIRST_HOUR}:ScaledWeightGrad", "--inputs", "randn(2, 2); randn(2, 2)",
                 "--check", "reverse", "-v")
    assert "output 0, input 1: * marks |reverse - numerical|" in result.stdout
    assert re.search(r"numerical\s+reverse", result.stdout)


def test_layout_entry_names_follow_numpy_order_and_interleaved_parts():
    from adcheck.runner.layouts import entry_name
    shape = [3, 4, 5]
    for flat in (0, 7, 59):
        expected = [int(k) for k in np.unravel_index(flat, shape)]
        assert entry_name([shape, False], flat) == str(expected)
    assert entry_name([[2, 2], True], 5) == "[1, 0].im"     # element 2, imaginary part
    assert entry_name([[2, 2], True], 4) == "[1, 0].re"
    assert entry_name([[], False], 0) == "[]"


# ----- item 5: wrappers, keyword arguments, index tensors, the engine hint --------------

def test_a_plain_function_calling_a_function_without_jvp_skips_forward(run_json):
    result, doc = run_json("check", f"{FIRST_HOUR}:calls_no_jvp", "--inputs", "randn(3, 4)")
    assert result.exit_code == 0
    forward = [r for r in doc["results"] if r["check"] == "forward"]
    assert forward and all(r["status"] == "skipped" and "no forward-mode rule" in r["message"]
                           for r in forward)


@pytest.mark.skipif(not HAS_JAX, reason="JAX is not installed")
def test_a_plain_jax_function_calling_a_custom_vjp_skips_forward(run_json, tmp_path):
    (tmp_path / "jw.py").write_text(
        "import jax, jax.numpy as jnp\n"
        "@jax.custom_vjp\n"
        "def s(x): return jnp.sin(x)\n"
        "s.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (jnp.cos(x) * g,))\n"
        "def wrap(x): return s(x) * 2\n")
    result, doc = run_json("check", f"{tmp_path / 'jw.py'}:wrap", "--engine", "jax",
                           "--inputs", "randn(3)")
    assert result.exit_code == 0
    assert [(r["check"], r["status"]) for r in doc["results"]] == [
        ("reverse", "passed"), ("forward", "skipped"), ("gradgrad", "passed")]


@pytest.mark.skipif(not HAS_JAX, reason="JAX is not installed")
def test_a_plain_jax_function_without_engine_jax_is_told_to_add_it(run, tmp_path):
    (tmp_path / "jf.py").write_text("import jax.numpy as jnp\ndef f(x):\n    return jnp.sin(x)\n")
    result = run("check", f"{tmp_path / 'jf.py'}:f")
    assert result.exit_code == 2
    assert "add --engine jax" in result.stderr and len(result.stderr.splitlines()) == 1


TORCH_BEHIND = """import torch
class Swish(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.sigmoid(x)
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(x)
        return g * s * (1 + x * (1 - s))
def swish(x):
    return Swish.apply(x)
def _inner(x):
    return torch.tanh(x)
def outer(x):
    return _inner(x) * 2
def nested(x):
    g = lambda t: torch.exp(t)
    return g(x)
"""


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed: the hint is for torch code")
@pytest.mark.parametrize("name", ["swish", "outer", "nested"])
def test_torch_behind_a_function_class_or_helper_is_told_too(run, tmp_path, name):
    # before: checked on refengine, three errors "argument 'input' must be Tensor, not Tensor"
    (tmp_path / "tb.py").write_text(TORCH_BEHIND)
    result = run("check", f"{tmp_path / 'tb.py'}:{name}", "--inputs", "randn(3)")
    assert result.exit_code == 2, result.stdout
    assert f"tb.py:{name} calls torch functions" in result.stderr
    assert "add --engine torch" in result.stderr and len(result.stderr.splitlines()) == 1
    told = run("check", f"{tmp_path / 'tb.py'}:{name}", "--inputs", "randn(3)", "--engine",
               "torch", "-q")
    assert told.exit_code == 0, told.stdout


def test_args_gives_a_required_keyword_argument(run_json):
    result, doc = run_json("check", f"{FIRST_HOUR}:total", "--args", "dim=1",
                           "--inputs", "randn(3, 4)")
    assert result.exit_code == 0, result.output
    assert doc["settings"]["inputs"] == ["randn(3, 4); dim=1"]
    # reduced over dim 1, the output has 3 entries: the layout says so
    assert doc["settings"]["layouts"][0]["outputs"] == [[[3], False]]


def test_a_keyword_argument_is_reproduced_by_rebuild_target():
    from adcheck import runner
    rebuilt = runner.rebuild_target(f"{FIRST_HOUR}:total", "randn(3, 4); dim=0")
    out = rebuilt.func(*rebuilt.inputs)
    x = rebuilt.inputs[0].detach().numpy()
    np.testing.assert_allclose(out.detach().numpy(), (x * x).sum(0))
    assert rebuilt.check().passed


def test_a_bad_args_value_is_one_line_exit_2(run):
    result = run("check", f"{FIRST_HOUR}:total", "--args", "dim=axis")
    assert result.exit_code == 2 and "--args" in result.stderr
    assert len(result.stderr.splitlines()) == 1


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
def test_an_index_tensor_in_inputs_is_held_fixed(run_json, tmp_path):
    (tmp_path / "g.py").write_text("def pick(x, idx):\n    return x.gather(0, idx) ** 2\n")
    result, doc = run_json("check", f"{tmp_path / 'g.py'}:pick", "--engine", "torch",
                           "--inputs", "randn(5); randint(5, 7) int64")
    assert result.exit_code == 0, result.output
    assert doc["settings"]["layouts"][0]["inputs"][1][0] == [7]


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
def test_float16_and_bfloat16_inputs_are_made_on_torch():
    from adcheck.runner.spec import build, parse
    x, y = build(parse("randn(3) float16; randn(3) bfloat16"), "torch",
                 np.random.default_rng(0))
    assert str(x.dtype) == "torch.float16" and str(y.dtype) == "torch.bfloat16"
    assert x.requires_grad and y.requires_grad


def test_bfloat16_on_refengine_is_a_usage_error_naming_the_engines(run):
    result = run("check", f"{FIRST_HOUR}:NoJvpSin", "--inputs", "randn(3) bfloat16")
    assert result.exit_code == 2
    assert "bfloat16 exist on --engine torch and jax" in result.stderr


# ----- item 6: default inputs that can show the bug -------------------------------------

def test_default_inputs_catch_a_reduction_over_the_wrong_axis(run_json):
    caught, doc = run_json("check", f"{FIRST_HOUR}:RowSoftmaxWrongAxis", "--check", "reverse")
    assert caught.exit_code == 1
    assert doc["results"][0]["status"] == "failed"
    # one row (the old default) cannot tell: the same formula passes there, with a warning
    one_row, _ = run_json("check", f"{FIRST_HOUR}:RowSoftmaxWrongAxis", "--check", "reverse",
                          "--inputs", "randn(3)")
    assert one_row.exit_code == 0
    assert "no input has several rows" in one_row.stderr


def test_default_inputs_include_a_complex_set_that_catches_a_missing_conj(run_json):
    result, doc = run_json("check", f"{FIXTURES / 'user_functions.py'}:UnconjugatedSquare",
                           "--check", "reverse")
    assert result.exit_code == 1
    by_dtype = {r["dtype"]: r["status"] for r in doc["results"]}
    assert by_dtype == {"float64": "passed", "complex128": "failed"}


def test_a_function_refusing_complex_gets_a_warning_of_what_cannot_show(run_json):
    result, doc = run_json("check", f"{FIRST_HOUR}:real_only")
    assert result.exit_code == 0
    assert "cannot show a complex bug" in result.stderr and "TypeError" in result.stderr
    assert all("complex" not in spec for spec in doc["settings"]["inputs"])


def test_the_warning_says_what_the_default_inputs_raised(run, tmp_path):
    # before: only "raised ValueError"; the message says which shape the object wants
    (tmp_path / "vec.py").write_text(
        "def norm2(x):\n"
        "    if x.ndim != 1:\n"
        "        raise ValueError(f'norm2 wants a vector, got {x.ndim} dimensions')\n"
        "    return (x * x).sum()\n")
    result = run("check", f"{tmp_path / 'vec.py'}:norm2", "--check", "reverse")
    assert result.exit_code == 0     # (on the one-row fallback, randn(3))
    assert ("norm2 raised ValueError (norm2 wants a vector, got 2 dimensions) on rows inputs "
            "(randn(3, 4))") in " ".join(result.stderr.split())


def test_a_two_input_function_gets_a_broadcast_set(run_json):
    _, doc = run_json("check", f"{FIRST_HOUR}:ScaledWeightGrad", "--check", "reverse")
    assert "randn(3, 4); randn(4)" in doc["settings"]["inputs"]
    # the broadcast set's layout: the second input has one row, broadcast to three
    index = doc["settings"]["inputs"].index("randn(3, 4); randn(4)")
    assert doc["settings"]["layouts"][index]["inputs"][1][0] == [4]


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed: the run is on --engine torch")
def test_an_object_that_exits_before_the_run_is_the_runs_error_not_adchecks_death(run_json,
                                                                                   tmp_path):
    (tmp_path / "ex.py").write_text(
        "import os\n"
        "def f(x):\n"
        "    if x.dtype.is_complex:\n"
        "        os._exit(3)\n"
        "    return x * x\n")
    result, doc = run_json("check", f"{tmp_path / 'ex.py'}:f", "--engine", "torch")
    # the rows set passed; the complex set killed its process: in the probe (this
    # process lived on) and in the run (an error naming the exit)
    assert result.exit_code == 1
    assert "exited with status 3" in result.stderr
    by_dtype = {}
    for r in doc["results"]:
        by_dtype.setdefault(r["dtype"], set()).add(r["status"])
    assert by_dtype["float64"] == {"passed"} and by_dtype["complex128"] == {"error"}


REAL_ONLY_SIN = (
    "import adcheck.refengine as E\n"
    "from adcheck.refengine.autograd import Function\n"
    "class RealSin(Function):\n"
    "    @staticmethod\n"
    "    def forward(ctx, x):\n"
    "        ctx.save_for_backward(x)\n"
    "        return x.sin()\n"
    "    @staticmethod\n"
    "    def backward(ctx, g):\n"
    "        (x,) = ctx.saved_tensors\n"
    "        return g * x.cos() * FACTOR\n")


@pytest.mark.parametrize("factor, told", [(1, True), (2, False)])
def test_failures_on_the_default_complex_set_alone_say_how_to_check_real_inputs(
        run, tmp_path, factor, told):
    # an activation written for real inputs whose forward runs on complex ones: its
    # vjp lacks conj() there, which is right to report, and all a newcomer sees
    (tmp_path / "act.py").write_text(REAL_ONLY_SIN.replace("FACTOR", str(factor)))
    result = run("check", f"{tmp_path / 'act.py'}:RealSin", "--check", "reverse")
    assert result.exit_code == 1
    said = "every failure and error is on the default complex inputs" in result.stderr
    assert said == told      # (a factor wrong on real inputs too: no such advice)
    if told:
        assert "check it on real ones alone (--inputs 'randn(3, 4)')" in \
            " ".join(result.stderr.split())


def test_complex_inputs_given_by_hand_get_no_such_advice(run, tmp_path):
    (tmp_path / "act.py").write_text(REAL_ONLY_SIN.replace("FACTOR", "1"))
    result = run("check", f"{tmp_path / 'act.py'}:RealSin", "--check", "reverse",
                 "--inputs", "randn(3, 4) complex128")
    assert result.exit_code == 1 and "default complex inputs" not in result.stderr
