"""adcheck check on JAX functions, each wrong one beside its refengine twin."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cli_paths import USER_FUNCTIONS

jax = pytest.importorskip("jax", reason="jax is not installed (pip install adcheck[jax])")

REPO = Path(__file__).resolve().parents[2]
JAX_OPS = str(REPO / "examples" / "jax_ops.py")

MODULE = '''
import jax
import jax.numpy as jnp


def _custom_vjp(forward, rule):
    f = jax.custom_vjp(forward)
    f.defvjp(lambda x: (forward(x), x), lambda x, ct: (rule(x, ct),))
    return f


def _custom_jvp(forward, rule):
    f = jax.custom_jvp(forward)
    f.defjvp(lambda primals, tangents: (forward(primals[0]), rule(primals[0], tangents[0])))
    return f


good_exp = _custom_vjp(jnp.exp, lambda x, ct: ct * jnp.exp(x))
doubled_sin = _custom_vjp(jnp.sin, lambda x, ct: 2 * ct * jnp.cos(x))
# twin of user_functions.UnconjugatedSquare: PyTorch's correct rule is JAX's wrong one
conjugated_square = _custom_vjp(lambda z: z * z, lambda z, ct: ct * 2 * jnp.conj(z))
doubled_sin_jvp = _custom_jvp(jnp.sin, lambda x, t: 2 * t * jnp.cos(x))


def plain_cube(x):
    return x * x * x


@jax.jit
def scaled(x, y):
    return x * jax.lax.stop_gradient(y)
'''


@pytest.fixture(autouse=True, scope="module")
def restore_x64():
    """adcheck check turns on JAX's 64-bit mode; put it back after this module."""
    previous = jax.config.jax_enable_x64
    yield
    jax.config.update("jax_enable_x64", previous)


@pytest.fixture(scope="module")
def jax_fns(tmp_path_factory):
    path = tmp_path_factory.mktemp("jax_targets") / "jax_fns.py"
    path.write_text(MODULE)
    return str(path)


#: one input set, where a test counts results (the defaults are several: docs/check.md)
ONE_SET = ("--inputs", "randn(3)")


def _kind(text):
    return None if text is None else re.sub(r"[-+]?\d[\d.e+-]*", "#", text)


def _outcome(doc):
    return [(r["check"], r["status"], _kind(r["diagnosis"])) for r in doc["results"]]


def test_a_wrong_custom_vjp_is_caught_and_diagnosed_like_its_refengine_twin(run_json, jax_fns):
    result, doc = run_json("check", f"{jax_fns}:doubled_sin", *ONE_SET)
    _, twin = run_json("check", f"{USER_FUNCTIONS}:DoubledSin", *ONE_SET)
    assert result.exit_code == 1
    assert doc["settings"]["engine"] == "jax" and doc["settings"]["kind"] == "jax custom_vjp"
    assert _outcome(doc) == _outcome(twin)
    (reverse,) = [r for r in doc["results"] if r["check"] == "reverse"]
    assert "analytical is 2 times numerical" in reverse["diagnosis"]


def test_a_custom_vjp_skips_forward_because_jax_has_no_jvp_through_it(run_json, jax_fns):
    _, doc = run_json("check", f"{jax_fns}:good_exp", *ONE_SET)
    assert [(r["check"], r["status"]) for r in doc["results"]] == [
        ("reverse", "passed"), ("forward", "skipped"), ("gradgrad", "passed")]
    assert "defines no jvp" in doc["results"][1]["message"]


def test_a_conjugate_in_the_wrong_convention_is_diagnosed_like_its_twin(run_json, jax_fns):
    spec = ("--inputs", "randn(3) complex128")
    result, doc = run_json("check", f"{jax_fns}:conjugated_square", *spec)
    _, twin = run_json("check", f"{USER_FUNCTIONS}:UnconjugatedSquare", *spec)
    assert result.exit_code == 1
    assert _outcome(doc) == _outcome(twin)
    assert "conjugate" in doc["results"][0]["diagnosis"]


def test_the_conjugate_rule_is_right_on_real_inputs(run, jax_fns):
    assert run("check", f"{jax_fns}:conjugated_square", "--inputs", "randn(3)").exit_code == 0


def test_a_wrong_custom_jvp_fails_both_modes(run_json, jax_fns):
    result, doc = run_json("check", f"{jax_fns}:doubled_sin_jvp", *ONE_SET)
    assert result.exit_code == 1 and doc["settings"]["kind"] == "jax custom_jvp"
    # the second order is that of the (wrong) first derivative, consistently so
    assert [(r["check"], r["status"]) for r in doc["results"]] == [
        ("reverse", "failed"), ("forward", "failed"), ("gradgrad", "passed")]
    assert all("2 times numerical" in r["diagnosis"] for r in doc["results"][:2])


def test_nograd_holds_an_input_of_a_jitted_function_fixed(run_json, jax_fns):
    held, doc = run_json("check", f"{jax_fns}:scaled", "--inputs", "randn(3); rand(3) nograd")
    assert held.exit_code == 0 and doc["settings"]["kind"] == "jax function"
    # differentiated, the stop_gradient input gets no gradient: caught
    free, doc = run_json("check", f"{jax_fns}:scaled", "--inputs", "randn(3); rand(3)",
                         "--check", "reverse")
    assert free.exit_code == 1 and "analytical is zero" in doc["results"][0]["diagnosis"]


def test_engine_jax_checks_a_plain_function_of_jax_arrays(run_json, jax_fns):
    result, doc = run_json("check", f"{jax_fns}:plain_cube", "--engine", "jax", *ONE_SET)
    assert result.exit_code == 0, result.output
    assert doc["settings"]["engine"] == "jax" and doc["settings"]["kind"] == "function"
    assert [(r["check"], r["status"]) for r in doc["results"]] == [
        ("reverse", "passed"), ("forward", "passed"), ("gradgrad", "passed")]


def test_second_order_checks_run_on_jax(run_json):
    result, doc = run_json("check", f"{JAX_OPS}:my_tanh", "--check", "reverse,gradgrad",
                           *ONE_SET)
    assert result.exit_code == 0, doc
    assert [r["status"] for r in doc["results"]] == ["passed", "passed"]


def test_the_example_file_fails_and_passes_as_its_docstring_says(run):
    assert run("check", f"{JAX_OPS}:my_sin", "-q").exit_code == 1
    assert run("check", f"{JAX_OPS}:my_tanh", "-q").exit_code == 0
    square = run("check", f"{JAX_OPS}:my_square", "--inputs", "randn(3) complex128", "-q")
    assert square.exit_code == 1 and "conjugate" in square.stdout


def test_checking_a_refengine_target_never_imports_jax():
    code = ("import sys\nfrom adcheck.cli.main import cli\n"
            "try:\n"
            f"    cli.main(['check', {USER_FUNCTIONS!r} + ':GoodExp', '-q'], "
            "standalone_mode=False)\n"
            "except SystemExit:\n    pass\n"
            "print('jax' in sys.modules, 'jaxlib' in sys.modules)\n")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True,
                            text=True, timeout=120, check=False)
    assert result.stdout.split()[-2:] == ["False", "False"], result.stderr
