"""A low-precision check that fails only on AD's NaN or inf where the true
derivative is finite is re-run in double precision: it is "cannot judge"
only when the formula passes there (it overflowed the dtype), and stays a
failure when the formula is wrong."""
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch", reason="the overflow needs a torch half-precision dtype")

from adcheck import gradcheck  # noqa: E402
from adcheck.gradcheck.core.options import Options  # noqa: E402
from adcheck.runner.checks import _overflowed  # noqa: E402
from adcheck.runner.judgement import overflow_only  # noqa: E402


def _softplus(factor):
    """softplus(x) = log(1 + exp(x)) with a vjp g * exp(x) / (1 + exp(x)) times
    ``factor``: right for 1, and NaN (inf / inf) in float16 where exp(x) > 65504."""
    class Softplus(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return torch.nn.functional.softplus(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            e = torch.exp(x)
            return factor * g * e / (1 + e)
    return Softplus.apply


@pytest.mark.parametrize("factor, judged", [(1.0, True), (1.5, False)])
def test_an_overflow_is_judged_by_the_same_check_in_double_precision(factor, judged):
    x = torch.tensor([0.5, -1.0, 12.0], dtype=torch.float16, requires_grad=True)
    assert torch.isinf(torch.exp(x)).any()              # float16's range ends at 65504
    kwargs = {"precise": True}
    report = gradcheck.check(_softplus(factor), (x,), name="softplus", seed=0, **kwargs)
    assert not report.passed and overflow_only(report, "float16")
    subject = SimpleNamespace(dtype_name="float16", name="softplus")
    call = SimpleNamespace(func=_softplus(factor), inputs=(x,))
    reason = _overflowed(subject, call, Options(precise=True, name="softplus", seed=0), report)
    if judged:
        assert reason.startswith("cannot judge") and "passes in double precision" in reason
    else:
        assert reason is None
