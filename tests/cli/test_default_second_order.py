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


def test_backward_returning_a_new_numpy_tensor_is_a_skip(run):
    # no graph even of the grad_output: before, the detached check's failure in
    # the grad_output's column made this a FAIL whose reason said "expected"
    result = run("check", f"{FILE}:NumpyExp", "--inputs", "randn(3, 4)", "-v")
    assert result.exit_code == 0, result.stdout
    (line,) = _gradgrad_lines(result.stdout)
    assert line.startswith("SKIP") and "NumpyExp has no double backward" in line


def test_intermediate_kept_from_forward_deep_in_a_model_is_named(run):
    result = run("check", f"{FILE}:NormNet", "--inputs", "randn(3, 4)")
    assert result.exit_code == 1, result.stdout
    lines = _gradgrad_lines(result.stdout)
    assert lines and all(line.startswith("FAIL") for line in lines)
    text = " ".join(" ".join(result.stdout.split()).split(" gradgrad: ")[1:])
    # rstd is named; the output it also saves has its history (KeptNorm's own node)
    assert ("KeptNormBackward keeps 1 tensor from its forward that changes with the inputs "
            "but carries no history (ctx.saved_tensors[0] of shape (3, 1))") in text
    assert "ctx.saved_tensors[1]" not in text


def test_only_second_order_asked_and_none_there_is_nothing_checked(run):
    result = run("check", f"{FILE}:NumpySin", "--inputs", "randn(3, 4)",
                 "--check", "gradgrad")
    assert result.exit_code == 3, result.stdout
    assert "has no double backward" in result.stdout


def test_registry_op_declaring_second_order_without_one_fails(run):
    result = run("check", "--plugin", FILE, "--dtype", "float64", "--check", "gradgrad")
    assert result.exit_code == 1, result.stdout
    assert "builds no graph" in result.stdout
