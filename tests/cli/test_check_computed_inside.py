"""adcheck check of float64 Functions that compute in a narrower dtype inside
(docs/python.md): judged at that dtype's precision and saying so, a wrong
one still failing; a bfloat16 one not passed on differences that resolve
nothing, and judged by --against a reference instead."""
import pytest
from cli_paths import FIXTURES

pytest.importorskip("torch", reason="the fixtures are torch Functions; torch is not installed")

FUNCTIONS = FIXTURES / "computed_inside.py"


def test_a_float32_softmax_passes_at_float32s_precision(run_json):
    result, document = run_json("check", f"{FUNCTIONS}:Softmax32", "--inputs", "randn(4, 5)")
    assert result.exit_code == 0, result.stdout
    statuses = {r["check"]: r["status"] for r in document["results"]}
    assert statuses == {"reverse": "passed", "forward": "skipped", "gradgrad": "passed"}
    messages = {r["check"]: r["message"] for r in document["results"]}
    assert "computes in float32 inside" in messages["reverse"]
    assert "first derivative was judged at float32's precision" in messages["gradgrad"]


def test_a_float32_softmax_one_percent_off_fails(run):
    result = run("check", f"{FUNCTIONS}:Softmax32Wrong", "--inputs", "randn(4, 5)",
                 "--check", "reverse")
    assert result.exit_code == 1
    assert "analytical is 1.01" in result.stdout and "a constant factor" in result.stdout
    assert "formulas against a float32 numerical Jacobian" in result.stdout


def test_a_bfloat16_square_is_not_passed_on_differences(run):
    result = run("check", f"{FUNCTIONS}:SquareBf16", "--inputs", "randn(3, 4)",
                 "--check", "reverse", "-v")
    assert result.exit_code == 3   # nothing judged
    assert "differences in bfloat16 resolve nothing here" in result.stdout
    assert "--against" in result.stdout


def test_against_a_reference_judges_the_bfloat16_square(run):
    result = run("check", f"{FUNCTIONS}:SquareBf16", "--against", f"{FUNCTIONS}:square",
                 "--inputs", "randn(3, 4)")
    assert result.exit_code == 0, result.stdout
    assert "computes in bfloat16 inside" in result.stdout
