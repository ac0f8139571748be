"""``kernels.check(order=2)`` and ``--check gradgrad``: the vjp's own derivatives.

The second derivative the buggy kernel should have is computed here without
adcheck: central differences (step 1e-5, float64) of the reference's
gradient, which torch's autograd gives in float64; the bug's size is the
kernel's double-backward error against them in float64, relative to the
largest entry.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from click.testing import CliRunner  # noqa: E402

from adcheck.cli.main import cli  # noqa: E402
from adcheck.gradcheck import kernels  # noqa: E402

FIXTURES = Path(__file__).resolve().parent / "fixtures"
sys.path.insert(0, str(FIXTURES))
from gelu_ops import FusedGelu, OnceGelu, SavedTanh, gelu_reference  # noqa: E402

OPS = str(FIXTURES / "gelu_ops.py")
DTYPES = (torch.bfloat16, torch.float16, torch.float32)


def _x(dtype):
    return torch.linspace(-3, 3, 16).to(dtype).requires_grad_()


def _second(report):
    return [r for r in report.results if r.order == 2]


def _second_derivative_error(kernel, x):
    """The kernel's d2y/dx2 (diagonal: GELU is elementwise) in float64 against
    central differences of the reference's float64 gradient, relative."""
    x64 = x.detach().double()

    def grad_of(f, at):
        at = at.clone().requires_grad_()
        (g,) = torch.autograd.grad(f(at).sum(), at, create_graph=True)
        return g

    h = 1e-5
    expected = (grad_of(gelu_reference, x64 + h) - grad_of(gelu_reference, x64 - h)) / (2 * h)
    leaf = x64.clone().requires_grad_()
    g = grad_of(kernel, leaf)
    (actual,) = torch.autograd.grad(g.sum(), leaf)
    expected = expected.detach()
    return float((actual - expected).abs().max() / expected.abs().max())


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_a_correct_backward_passes_at_second_order_with_a_resolution(dtype):
    report = kernels.check(FusedGelu.apply, _x(dtype), against=gelu_reference, order=2)
    assert report.passed, kernels.summary(report)
    second = _second(report)
    assert {kernels.verdicts.name_of(r) for r in second} == {"gradgrad"}
    assert all(r.precision.resolution > 0 for r in second)
    assert "second order, reverse over reverse" in kernels.summary(report)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_a_saved_intermediate_is_found_at_second_order_only(dtype):
    report = kernels.check(SavedTanh.apply, _x(dtype), against=gelu_reference, order=2)
    size = _second_derivative_error(SavedTanh.apply, _x(dtype))
    assert size > 0.1                                     # the bug is there, as planted
    first = [r for r in report.results if r.order == 1]
    assert all(r.passed for r in first), kernels.summary(report)
    (gg,) = _second(report)
    assert size > 1.5 * gg.precision.resolution           # above what it states it sees
    assert not gg.passed, kernels.summary(report)


def test_order_1_does_not_judge_the_second_order():
    report = kernels.check(SavedTanh.apply, _x(torch.float32), against=gelu_reference)
    assert report.passed and not _second(report)


def test_a_backward_that_cannot_be_differentiated_is_named():
    with pytest.raises(ValueError, match="OnceGelu's backward cannot be differentiated"):
        kernels.check(OnceGelu.apply, _x(torch.float16), against=gelu_reference, order=2)


def test_a_reference_wrong_at_second_order_is_blamed_not_the_kernel():
    report = kernels.check(FusedGelu.apply, _x(torch.float16), against=SavedTanh.apply,
                           order=2)
    assert not report.passed
    assert all(r.order == 2 for r in report.failures)
    assert all("the reference's own second derivatives are wrong" in r.detail
               for r in report.failures)
    assert "the kernel's second order was not judged" in kernels.summary(report)


def test_order_must_be_1_or_2():
    with pytest.raises(ValueError, match="order must be 1 or 2"):
        kernels.check(FusedGelu.apply, _x(torch.float16), against=gelu_reference, order=3)


def _run(*args):
    return CliRunner().invoke(cli, ["check", f"{OPS}:SavedTanh", "--against",
                                    f"{OPS}:gelu_reference", "--inputs", "randn(12) float16",
                                    *args])


def test_check_gradgrad_asks_for_the_second_order_on_the_command_line():
    assert _run().exit_code == 0            # first order only unless asked
    result = _run("--check", "reverse,gradgrad")
    assert result.exit_code == 1, result.output
    assert "FAIL second order, reverse over reverse" in result.output


def test_a_check_a_kernel_has_not_is_one_line_and_exit_2():
    result = _run("--check", "fast")
    assert result.exit_code == 2
    assert "--check fast does not apply to a kernel" in result.output
    assert len(result.output.strip().splitlines()) == 1
