"""Complex kernels: a complex64 kernel judged against a complex128 reference.

The gradient a correct backward returns is checked here without adcheck:
for the real loss L = Re(sum(conj(v) * y)), torch's gradient with respect to
z is dL/dRe(z) + i dL/dIm(z), taken by central differences in float64 of the
reference; the buggy backward's error against it is the bug's size.
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
from complex_ops import NoConjugate, Product, product_reference  # noqa: E402

OPS = str(FIXTURES / "complex_ops.py")


def _inputs(dtype=torch.complex64):
    g = torch.Generator().manual_seed(0)
    return tuple(torch.randn(6, generator=g, dtype=torch.complex128).to(dtype).requires_grad_()
                 for _ in range(2))


def _bug_size(kernel):
    """The kernel's gradient of z (complex128, cotangent v) against central
    differences of the reference's loss, relative to the largest entry."""
    z, w = (x.detach().to(torch.complex128) for x in _inputs())
    v = torch.linspace(-1, 1, 6, dtype=torch.float64) * (1 + 0.5j)

    def loss(zz):
        return float((v.conj() * product_reference(zz, w)).sum().real)

    h = 1e-6
    expected = torch.zeros(6, dtype=torch.complex128)
    for k in range(6):
        e = torch.zeros(6, dtype=torch.complex128)
        e[k] = h
        expected[k] = (loss(z + e) - loss(z - e)) / (2 * h) \
            + 1j * (loss(z + 1j * e) - loss(z - 1j * e)) / (2 * h)
    leaf = z.clone().requires_grad_()
    (actual,) = torch.autograd.grad(kernel(leaf, w), leaf, v)
    return float((actual - expected).abs().max() / expected.abs().max())


def test_a_correct_complex64_kernel_passes_and_says_how_it_was_judged():
    assert _bug_size(Product.apply) < 1e-8         # the planted formula is right
    report = kernels.check(Product.apply, _inputs(), against=product_reference)
    assert report.passed, kernels.summary(report)
    assert any("conjugate Wirtinger" in note for note in report.coverage["kernel"])
    assert "(a complex kernel's float32 real and imaginary parts against" in \
        kernels.summary(report)
    assert all(r.precision.resolution < 1e-4 for r in report.results)   # float32 parts


def test_a_missing_conjugate_is_found_and_named():
    size = _bug_size(NoConjugate.apply)
    assert size > 0.1                               # the bug is there, as planted
    report = kernels.check(NoConjugate.apply, _inputs(), against=product_reference)
    (z_grad,) = [r for r in report.results if r.check == "reverse" and r.in_idx == 0]
    assert size > 1.5 * z_grad.precision.resolution and not z_grad.passed
    assert "a .conj() missing or extra" in z_grad.diagnosis


def test_a_complex_kernel_at_second_order():
    report = kernels.check(product_reference, _inputs(), against=product_reference, order=2,
                           check_forward_ad=False)
    assert report.passed, kernels.summary(report)
    assert any(r.order == 2 for r in report.results)


def test_complex_inputs_on_the_command_line():
    args = ["check", f"{OPS}:Product", "--against", f"{OPS}:product_reference", "--inputs",
            "randn(6) complex64; randn(6) complex64"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "conjugate Wirtinger" in result.output
    result = CliRunner().invoke(cli, [*args[:1], f"{OPS}:NoConjugate", *args[2:]])
    assert result.exit_code == 1 and "FAIL vjp (reverse mode), output 0, input 0" in result.output
