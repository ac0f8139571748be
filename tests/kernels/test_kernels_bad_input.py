"""``kernels.check``: a wrong reference, bad references and inputs, nondeterminism, devices."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from adcheck.gradcheck import kernels  # noqa: E402
from adcheck.gradcheck.errors import GradcheckError  # noqa: E402
from adcheck.gradcheck.kernels import device  # noqa: E402


def gelu_reference(x):
    return 0.5 * x * (1 + torch.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))


def gelu_kernel(x):
    return gelu_reference(x.float()).to(x.dtype)


class WrongGrad(torch.autograd.Function):
    """A reference whose hand-written backward is off by 10%."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return gelu_reference(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        with torch.enable_grad():
            xx = x.detach().requires_grad_()
            (d,) = torch.autograd.grad(gelu_reference(xx), xx, g)
        return 1.1 * d


def _x(dtype=torch.bfloat16):
    return torch.linspace(-3, 3, 24).to(dtype).requires_grad_()


def test_a_wrong_reference_is_reported_as_the_reference_not_the_kernel():
    report = kernels.check(gelu_kernel, _x(), against=WrongGrad.apply)
    assert not report.passed
    assert report.name == "WrongGrad (the reference of gelu_kernel)"
    assert "not the kernel's" in report.failures[0].detail
    assert "the kernel was not judged" in report.coverage["kernel"][0]


def test_a_reference_that_raises_in_float64_is_a_value_error():
    def refuses(x):
        if x.dtype == torch.float64:
            raise RuntimeError("no float64 here")
        return x
    with pytest.raises(ValueError, match="the reference refuses fails in float64: RuntimeError: no float64 here"):
        kernels.check(gelu_kernel, _x(), against=refuses)


def test_a_reference_with_other_outputs_is_a_value_error():
    with pytest.raises(ValueError, match="returns 2 output"):
        kernels.check(gelu_kernel, _x(), against=lambda x: (gelu_reference(x), x))
    with pytest.raises(ValueError, match="shape"):
        kernels.check(gelu_kernel, _x(), against=lambda x: gelu_reference(x).sum())


def test_a_reference_that_is_not_differentiable_is_a_value_error():
    with pytest.raises(ValueError, match="not differentiable"):
        kernels.check(gelu_kernel, _x(), against=lambda x: gelu_reference(x).detach())


def test_a_kernel_that_refuses_float64_names_the_fix():
    def low_only(x):
        if x.dtype == torch.float64:
            raise TypeError("this kernel runs in bfloat16 and float16 only")
        return gelu_kernel(x)
    with pytest.raises(GradcheckError, match="pass its inputs in the dtype it runs in"):
        kernels.check(low_only, _x(torch.float64), against=gelu_reference)


def test_a_kernel_returning_float32_from_bfloat16_is_judged_in_float32_and_says_so():
    report = kernels.check(lambda x: gelu_reference(x.float()), _x(), against=gelu_reference)
    assert report.passed, kernels.summary(report)
    assert any("returns float32 from bfloat16 inputs" in n for n in report.coverage["kernel"])
    value = next(r for r in report.results if r.check == "value")
    assert value.precision.formula == "float32"


def _noisy(size):
    """GELU whose backward adds fresh noise of ``size`` relative on every call."""
    class Noisy(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return gelu_kernel(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            with torch.enable_grad():
                xx = x.detach().float().requires_grad_()
                (d,) = torch.autograd.grad(gelu_reference(xx), xx, g.float())
            return (d * (1 + size * torch.randn_like(d))).to(x.dtype)
    return Noisy.apply


def test_runs_that_differ_beyond_rounding_are_nondeterminism_not_a_wrong_formula():
    torch.manual_seed(0)
    report = kernels.check(_noisy(0.2), _x(torch.float32), against=gelu_reference,
                           check_forward_ad=False)
    checks = {r.check for r in report.failures}
    assert "nondeterministic" in checks
    assert "nondeterminism" in report.failures[0].diagnosis


def test_runs_that_differ_within_rounding_widen_the_allowance_and_pass():
    torch.manual_seed(0)
    report = kernels.check(_noisy(2.0 ** -26), _x(torch.float32), against=gelu_reference,
                           check_forward_ad=False)
    assert report.passed, kernels.summary(report)
    assert any("spread" in n for n in report.coverage["kernel"])


def test_inputs_on_two_devices_are_refused():
    with pytest.raises(ValueError, match="one device"):
        device.device_of((torch.zeros(1), torch.zeros(1, device="meta")))


@pytest.mark.skipif(not torch.cuda.is_available(),
                    reason="needs a CUDA device; this machine runs torch on the CPU only")
def test_a_kernel_on_cuda_is_judged_there():
    x = _x().cuda()
    seen = []

    def on_device(x):
        seen.append(x.device.type)
        return gelu_kernel(x)
    report = kernels.check(on_device, x, against=gelu_reference)
    assert report.passed and set(seen) == {"cuda"}


def test_gradcheck_check_with_against_points_to_the_kernel_check():
    from adcheck import gradcheck
    with pytest.raises(TypeError, match=r"kernels.check\(kernel, inputs, against=ref\); "
                                        r"check\(reference=...\) takes an mpmath reference"):
        gradcheck.check(gelu_kernel, _x(), against=gelu_reference)


def test_a_jacobian_beyond_the_memory_budget_is_refused_naming_it():
    from adcheck.gradcheck.errors import UncheckableError
    x = torch.randn(300, dtype=torch.float32).requires_grad_()    # 90,000 entries
    with pytest.raises(UncheckableError, match=r"90,000 entries, .* memory budget of 1 MiB"):
        kernels.check(gelu_kernel, x, against=gelu_reference, memory_budget=2**20)
