"""``adcheck check`` checks second order by default where the object has a
double backward (issue 28, item 7).

An object without one (its backward computes in NumPy) is skipped at second
order with the reason, and the run still passes on its first derivatives; a
wrong second derivative (a SiLU whose backward detaches sigmoid) fails with no
option given. A registry op that declares second order and has none fails.
"""
import importlib.util
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                reason="PyTorch is not installed: fixtures/second_order.py "
                                "defines its Functions in torch")

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


def test_torch_without_a_double_backward_or_jvp_for_its_kernel_is_a_skip(run):
    import torch
    sys.path.insert(0, str(Path(FILE).parent))
    from second_order import flash_attention
    q, k, v = (torch.randn(1, 2, 3, 4, dtype=torch.float64, requires_grad=True)
               for _ in range(3))
    # torch's own verdicts on the kernel: no derivative of its backward, no jvp
    with pytest.raises(RuntimeError, match="derivative for .* is not implemented"):
        torch.autograd.gradgradcheck(flash_attention, (q, k, v))
    with pytest.raises(NotImplementedError, match="Trying to use forward AD with"):
        torch.func.jvp(flash_attention, (q, k, v), (q, k, v))
    spec = "; ".join(["randn(1, 2, 3, 4)"] * 3)
    result = run("check", f"{FILE}:flash_attention", "--engine", "torch", "--inputs", spec, "-v")
    assert result.exit_code == 0, result.stdout   # (before: 1, two errors)
    text = " ".join(result.stdout.split())
    assert ("SKIP flash_attention float64[0] gradgrad: second order not checked: "
            "flash_attention has no double backward (the engine implements no derivative of "
            "an operation its backward calls: derivative for aten::") in text
    assert ("SKIP flash_attention float64[0] forward: forward mode does not run through "
            "flash_attention: code it calls has no forward-mode rule (NotImplementedError: "
            "Trying to use forward AD with") in text
    assert "the engine has none for that operation" in text
    assert "1 passed, 0 failed" in text


def test_only_second_order_asked_and_none_there_is_nothing_checked(run):
    result = run("check", f"{FILE}:NumpySin", "--inputs", "randn(3, 4)",
                 "--check", "gradgrad")
    assert result.exit_code == 3, result.stdout
    assert "has no double backward" in result.stdout


def test_registry_op_declaring_second_order_without_one_fails(run):
    result = run("check", "--plugin", FILE, "--dtype", "float64", "--check", "gradgrad")
    assert result.exit_code == 1, result.stdout
    assert "builds no graph" in result.stdout
