"""A float32 formula judged at inputs closer to the edge of its domain than
the curvature step (``log`` at 1e-6, whose float64 second differences stepped
by 1.5e-5 read ``log`` of a negative number): the NaN curvature gave every
entry an infinite allowance and a backward 100 times too small passed ("no
entry large enough to judge a relative error by", yet passed). A step that
leaves the domain now gives way to one relative to the coordinate itself."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from adcheck.gradcheck import check  # noqa: E402


def _log_function(factor: float):
    class Log(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.log()

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad / x * factor   # d log x / dx = 1 / x (factor 1 is right)

    return Log.apply


def _clamped_log(limit: float):
    """pyro's safe_log: the derivative 1/x clamped at ``limit``."""
    class SafeLog(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.log()

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad / x.clamp(min=1.0 / limit)

    return SafeLog.apply


TINY = [[1e-6, 2e-6, 5e-6], [3e-7, 8e-6, 1e-5]]


def _inputs(values):
    return (torch.tensor(values, dtype=torch.float32, requires_grad=True),)


@pytest.mark.parametrize("values", [TINY, [0.5, 2.0, 1e-8, 3e-9]])
def test_a_right_log_passes_near_the_edge_of_its_domain(values):
    report = check(_log_function(1.0), _inputs(values), precise=True)
    assert report.passed, report.message()


@pytest.mark.parametrize("factor", [0.01, 0.5, 1.01])
def test_a_wrong_log_fails_near_the_edge_of_its_domain(factor):
    report = check(_log_function(factor), _inputs(TINY), precise=True)
    assert not report.passed


def test_a_clamped_derivative_fails_where_the_clamp_acts():
    # 1/x at 1e-8 is 1e8; the clamp at 1/eps(float32) gives 8.4e6
    x = np.array([0.5, 2.0, 1e-8, 3e-9])
    limit = 1.0 / np.finfo(np.float32).eps
    assert np.all(1.0 / x[2:] > 10 * limit)
    report = check(_clamped_log(limit), _inputs(x.tolist()), precise=True)
    assert not report.passed
    result = next(r for r in report.failures if r.check == "reverse")
    assert result.where in {(2, 2), (3, 3)}
