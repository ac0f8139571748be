"""Derivatives that are zero in exact arithmetic (corrcoef of one variable): the
scaling check allows the measured rounding noise of the product, a
second-order check of a first derivative that is all noise says it cannot
judge it, and a formula error of the same shape is still caught."""
import pytest

torch = pytest.importorskip("torch", reason="the cases are torch functions")

from adcheck import gradcheck  # noqa: E402
from adcheck.gradcheck.errors import UncheckableError  # noqa: E402


def _one_variable():
    # two observations of one variable, close together: corrcoef is 1 exactly in
    # exact arithmetic, and the cancellation makes its derivative's rounding large
    return torch.tensor([[7.7562638320906565, 7.729689411773434]], dtype=torch.float64,
                        requires_grad=True)


def test_the_function_is_constant_so_every_derivative_is_zero():
    x = _one_variable().detach()
    for t in (x, x * 2 + 3, x.flip(-1)):
        assert float(torch.corrcoef(t)) == 1.0


def test_scaling_allows_the_rounding_noise_of_a_zero_vjp():
    report = gradcheck.check(torch.corrcoef, (_one_variable(),), precise=True, seed=1)
    assert report.passed, report.message()


def test_second_order_of_a_noise_first_derivative_cannot_be_judged():
    # (the noise is judged only once the check has failed: with about a third
    # of the seeds it stays within the tolerances and the check passes; seed 1
    # is one whose check fails on it)
    with pytest.raises(UncheckableError, match="rounding noise"):
        gradcheck.check(torch.corrcoef, (_one_variable(),), precise=True, order=2, seed=1)


class _IgnoresGradOutput(torch.autograd.Function):
    """corrcoef's value with a vjp that adds a constant: not linear in grad_output."""

    @staticmethod
    def forward(ctx, x):
        return torch.corrcoef(x)

    @staticmethod
    def backward(ctx, grad):
        return torch.full((1, 2), 1e-3, dtype=grad.dtype) + 0 * grad


def test_a_vjp_that_is_not_linear_is_still_caught_where_the_true_one_is_noise():
    report = gradcheck.check(_IgnoresGradOutput.apply, (_one_variable(),), precise=True,
                             seed=0)
    assert "scaling" in {r.check for r in report.failures}


def test_a_smooth_first_derivative_is_not_called_noise():
    # x**3 at points where its first derivative 3 x**2 v is far from noise
    x = torch.tensor([0.5, 1.25, -2.0], dtype=torch.float64, requires_grad=True)
    report = gradcheck.check(lambda t: t ** 3, (x,), precise=True, order=2, seed=0)
    assert report.passed, report.message()


def _jittered(scale):
    """x * 2 with a different relative jitter of ``scale`` at each call."""
    calls = [0]

    def f(x):
        calls[0] += 1
        return x * 2 * (1 + scale * (-1) ** calls[0])
    return f


def test_a_low_precision_repeat_may_differ_by_its_rounding():
    # as torch means nondet_tol: two runs of a float32 kernel may differ in their
    # last bits; a change of one unit of float32 rounding is not nondeterminism
    x = torch.tensor([0.3, -1.7, 2.2], dtype=torch.float32, requires_grad=True)
    eps = torch.finfo(torch.float32).eps
    report = gradcheck.check(_jittered(eps), (x,), precise=True, seed=0)
    assert "deterministic" not in {r.check for r in report.failures}
    report = gradcheck.check(_jittered(1e-3), (x,), precise=True, seed=0)
    assert "deterministic" in {r.check for r in report.failures}


def test_a_double_precision_repeat_may_differ_by_rounding_only():
    # LAPACK's vectorised paths depend on where arrays sit in memory:
    # torch.linalg.lstsq of a complex 3x4 system differed between two calls by a
    # few units of rounding in 6 checks of 40, and failed as "nondeterministic"
    # (torch's gradcheck, which checks no forward's determinism, passed 60 of 60)
    x = torch.tensor([0.3, -1.7, 2.2], dtype=torch.float64, requires_grad=True)
    report = gradcheck.check(_jittered(4 * torch.finfo(torch.float64).eps), (x,), seed=0)
    assert report.passed, report.message()
    report = gradcheck.check(_jittered(1e-12), (x,), seed=0)
    assert "deterministic" in {r.check for r in report.failures}


class _SoftmaxDetachedBackward(torch.autograd.Function):
    """softmax with a right vjp whose own derivative misses a term: the backward
    reads the saved output through ``detach`` in one factor."""

    @staticmethod
    def forward(ctx, x):
        y = torch.softmax(x, -1)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        y, = ctx.saved_tensors
        return y * (grad - (grad * y.detach()).sum(-1, keepdim=True))


def test_a_zero_product_of_ones_does_not_excuse_a_second_order_error():
    # softmax's outputs do not move when every input moves alike (J 1 = 0), so
    # the first derivative's vjp of ones is zero in exact arithmetic; that is a
    # sum of second-order entries, not the entries, and the planted error in
    # them must fail the check, as torch's gradgradcheck fails it
    x = torch.randn(3, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(0),
                    requires_grad=True)
    assert torch.autograd.gradcheck(_SoftmaxDetachedBackward.apply, (x,))
    with pytest.raises(RuntimeError, match="Jacobian mismatch"):
        torch.autograd.gradgradcheck(_SoftmaxDetachedBackward.apply, (x,))
    for keywords in ({"precise": True}, {"precise": False}):
        report = gradcheck.check(_SoftmaxDetachedBackward.apply, (x,), order=2, seed=0,
                                 **keywords)
        assert not report.passed
        assert {"reverse"} <= {r.check for r in report.failures}
