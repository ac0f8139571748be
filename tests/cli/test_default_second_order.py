"""``adcheck check`` checks second order by default where the object has a
double backward (issue 28, item 7).

An object without one (its backward computes in NumPy) is skipped at second
order with the reason, and the run still passes on its first derivatives; a
wrong second derivative (a SiLU whose backward detaches sigmoid) fails with no
option given. A registry op that declares second order and has none fails.
"""
from pathlib import Path

import pytest

FILE = str(Path(__file__).parent / "fixtures" / "second_order.py")


def _gradgrad_lines(stdout: str) -> list:
    return [line for line in stdout.splitlines() if " gradgrad: " in line]


def test_wrong_second_derivative_fails_by_default(run):
    result = run("check", f"{FILE}:DetachedSiLU", "--inputs", "randn(3, 4)")
    assert result.exit_code == 1, result.stdout
    (line,) = _gradgrad_lines(result.stdout)
    assert line.startswith("FAIL") and "reverse-over-reverse" in line


def test_right_second_derivative_passes_by_default(run):
    result = run("check", f"{FILE}:SiLU", "--inputs", "randn(3, 4)", "-v")
    assert result.exit_code == 0, result.stdout
    assert "gradgrad" in result.stdout and not _gradgrad_lines(result.stdout)


@pytest.mark.parametrize("name", ["NumpySin", "RefNumpySin"])
def test_no_double_backward_is_a_skip_with_its_reason(run, name):
    result = run("check", f"{FILE}:{name}", "--inputs", "randn(3, 4)", "-v")
    assert result.exit_code == 0, result.stdout
    (line,) = _gradgrad_lines(result.stdout)
    assert line.startswith("SKIP") and f"{name} has no double backward" in line


def test_only_second_order_asked_and_none_there_is_nothing_checked(run):
    result = run("check", f"{FILE}:NumpySin", "--inputs", "randn(3, 4)",
                 "--check", "gradgrad")
    assert result.exit_code == 3, result.stdout
    assert "has no double backward" in result.stdout


def test_registry_op_declaring_second_order_without_one_fails(run):
    result = run("check", "--plugin", FILE, "--dtype", "float64", "--check", "gradgrad")
    assert result.exit_code == 1, result.stdout
    assert "builds no graph" in result.stdout
