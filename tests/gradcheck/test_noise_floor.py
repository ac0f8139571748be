"""Outputs whose rounding is normwise (an SVD, a solve): pinverse's small entries
carry errors of the size of an ulp of its largest entry, which the measured
noise floor (``gradcheck.numerics.noisefloor``) puts under the finite differences'
error estimate. Judged against mpmath, and a planted error stays caught."""
import mpmath
import pytest

torch = pytest.importorskip("torch", reason="the case is PyTorch's pinverse on op_db's sample")
pytest.importorskip("expecttest", reason="PyTorch's op_db imports expecttest, which is "
                    "not installed (pip install expecttest)")

from types import SimpleNamespace  # noqa: E402

from adcheck import gradcheck  # noqa: E402
from adcheck.opinfo import torchdb  # noqa: E402
from adcheck.runner.checks import Policy, check_sample  # noqa: E402
from adcheck.runner.torchregistry import TorchRegistry  # noqa: E402

# the entry the sweep disputed: output pinv[4, 0] by input A[3, 4] (flat 20 by 19)
OUT, IN = (4, 0), (3, 4)


def _matrix():
    # op_db's first float64 sample of pinverse, as the sweep draws it: a well
    # conditioned 5 x 5 matrix whose pinverse has entries from 1e-4 to 0.9
    return torch.as_tensor(torchdb.get("pinverse").sample(0, "float64").input.detach())


def _exact_entry(a) -> float:
    mpmath.mp.dps = 50
    m = mpmath.matrix(a.tolist())
    step = mpmath.mpf("1e-25")

    def inverse_at(delta):
        moved = m.copy()
        moved[IN] += delta
        return mpmath.inverse(moved)[OUT]   # square and invertible: pinv is inv
    return float((inverse_at(step) - inverse_at(-step)) / (2 * step))


def _ad_entry(a) -> float:
    x = a.clone().requires_grad_()
    grad_out = torch.zeros(5, 5, dtype=torch.float64)
    grad_out[OUT] = 1
    return float(torch.autograd.grad(torch.pinverse(x), x, grad_out)[0][IN])


def test_pinverse_is_right_and_passes_the_precise_check():
    a = _matrix()
    assert torch.linalg.cond(a) < 10
    exact = _exact_entry(a)
    assert abs(_ad_entry(a) - exact) <= 1e-10 * abs(exact)
    x = a.clone().requires_grad_()
    report = gradcheck.check(torch.pinverse, (x,), precise=True, check_forward_ad=True, seed=0)
    assert report.passed, report.message()


class _PlantedPinverse(torch.autograd.Function):
    """pinverse whose vjp is off by 1e-9 in the disputed entry (1e-4 of it)."""

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return torch.pinverse(a)

    @staticmethod
    def backward(ctx, grad):
        a, = ctx.saved_tensors
        with torch.enable_grad():
            x = a.detach().requires_grad_()
            right = torch.autograd.grad(torch.pinverse(x), x, grad)[0]
        planted = torch.zeros_like(right)
        planted[IN] = 1e-9 * grad[OUT]
        return right + planted


def test_an_error_in_a_small_entry_is_still_caught():
    x = _matrix().requires_grad_()
    report = gradcheck.check(_PlantedPinverse.apply, (x,), precise=True, seed=0)
    assert not report.passed
    failure = report.failures[0]
    assert failure.where == (OUT[0] * 5 + OUT[1], IN[0] * 5 + IN[1])


def test_a_pole_in_the_sample_does_not_raise_every_floor():
    # op_db's bfloat16 sample of digamma holds -4.0, a pole: its first derivative
    # is huge there and its curvature over a few ulps is no noise; the floor of
    # the other coordinates must stay theirs, so the check still sees that the
    # second derivative is infinite there and cannot be judged
    entry = torchdb.get("digamma")
    sample = entry.sample(0, "bfloat16")
    assert bool((sample.input.detach() == -4).any())
    result = _swept(entry, sample, "bfloat16", "gradgrad")
    assert result.status == "skipped" and result.message.startswith("cannot judge")
    assert "the true derivative is infinite" in result.message


def test_a_sample_of_mixed_magnitudes_is_judged_on_each_entrys_scale():
    # op_db's second complex64 sample of abs mixes 1e-30 and 1e30: at 1e-30 + 1e-30j
    # every step of 2**-11 and below straddles abs's kink at 0 (a floor measured with
    # moves of the largest input's ulps hid that and failed the sample by 2.4e29; then
    # it was skipped as a kink). abs is smooth there, 1.4e-30 from 0, and steps of the
    # entry's own scale (gradcheck.numerics.smallsteps) stay clear of the kink: passed
    entry = torchdb.get("abs")
    sample = entry.sample(1, "complex64")
    magnitudes = sample.input.detach().abs()
    assert float(magnitudes.min()) < 1e-29 and float(magnitudes.max()) > 1e29
    z = sample.input.detach().to(torch.complex128)[0].item()
    assert abs(z - complex(1e-30, 1e-30)) < 1e-37   # (1e-30 in complex64)
    x = torch.tensor([z.real, z.imag], dtype=torch.float64, requires_grad=True)
    grad, = torch.autograd.grad(torch.abs(torch.complex(x[0], x[1])), x)
    assert torch.allclose(grad, torch.tensor([z.real, z.imag], dtype=torch.float64) / abs(z),
                          rtol=1e-15)   # d|z|/dx = x / |z|: abs is smooth there
    result = _swept(entry, sample, "complex64", "fwgrad_bwgrad")
    assert result.status == "passed", result.message


def _swept(entry, sample, dtype, check):
    """The result ``adcheck ops --registry torch`` gives ``check`` of ``sample``."""
    settings = SimpleNamespace(registry=TorchRegistry(), checks=(check,),
                               policy=Policy(precise=True, engine="torch"))
    ((result, _),) = check_sample(entry, sample, torchdb.dtype_named(dtype), settings)
    return result
