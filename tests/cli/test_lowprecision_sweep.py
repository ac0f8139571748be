"""``adcheck ops --low-precision`` and the torch-only dtypes: every result a
verdict or a reason, and the precision each comparison had, in JSON and table."""
import importlib.util

import pytest

torch_missing = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                   reason="--engine torch needs PyTorch")


def test_low_precision_adds_float32_and_complex64_with_their_precision(run_json):
    result, doc = run_json("ops", "sin", "--check", "reverse", "--low-precision", "-q")
    assert result.exit_code == 0, result.output
    dtypes = {r["dtype"] for r in doc["results"]}
    assert dtypes == {"float64", "complex128", "float32", "complex64"}
    for r in doc["results"]:
        assert r["status"] in ("passed", "skipped"), r
        if r["dtype"] in ("float64", "complex128"):
            assert r["precision"] is None and r["resolution"] is None
        elif r["status"] == "passed" and r["resolution"] is not None:
            assert r["precision"].startswith(f"{r['dtype']} formula against a ")
            assert "relative detectable" in r["precision"]
            assert 0 < r["resolution"] < 2e-3


def test_the_table_says_what_low_precision_checks_could_detect(run):
    result = run("ops", "exp", "--check", "reverse", "--dtype", "float32")
    assert result.exit_code == 0, result.output
    assert "float32: formulas against a float64 numerical Jacobian" in result.stdout
    assert "detectable (median over" in result.stdout


@torch_missing
def test_torch_sweeps_bfloat16_and_float16_from_the_float32_samples(run_json):
    result, doc = run_json("ops", "tanh", "softmax", "--engine", "torch", "--dtype",
                           "bfloat16,float16", "--check", "reverse,forward")
    assert result.exit_code == 0, result.output
    passed = [r for r in doc["results"] if r["status"] == "passed"]
    assert {r["dtype"] for r in passed} == {"bfloat16", "float16"}
    assert all(r["precision"].startswith(f"{r['dtype']} formula against a float64")
               for r in passed if r["resolution"] is not None)


@torch_missing
def test_an_op_torch_lacks_in_bfloat16_is_skipped_with_the_reason(run_json):
    result, doc = run_json("ops", "polar", "--engine", "torch", "--dtype", "bfloat16",
                           "--check", "reverse")
    assert doc["results"] and all(r["status"] == "skipped" for r in doc["results"])
    assert "not in bfloat16 on CPU" in doc["results"][0]["message"]
    # nothing about polar was judged: not a pass (exit 3), unless that is accepted
    assert result.exit_code == 3, result.output
    assert "polar" in doc["unjudged"]
    accepted, _ = run_json("ops", "polar", "--engine", "torch", "--dtype", "bfloat16",
                           "--check", "reverse", "--allow-empty")
    assert accepted.exit_code == 0, accepted.output


def test_a_torch_only_dtype_on_refengine_is_a_usage_error(run):
    result = run("ops", "sin", "--dtype", "bfloat16")
    assert result.exit_code == 2
    assert "bfloat16 exist on --engine torch only" in result.stderr


@torch_missing
def test_an_op_with_a_complex32_output_is_checked_in_float16(run_json):
    # view_as_complex of float16 is complex32, which NumPy lacks: the sweep holds it
    # as complex64 instead of skipping the op as if torch had no float16 kernel
    result, doc = run_json("ops", "view_as_complex", "--engine", "torch", "--dtype",
                           "float16", "--check", "reverse,forward")
    assert result.exit_code == 0, result.output
    assert doc["results"] and all(r["status"] == "passed" for r in doc["results"]), doc
    assert all(r["precision"].startswith("float16 formula against a complex128")
               for r in doc["results"])
