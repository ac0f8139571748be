"""Low-precision false alarms of the whole-op_db sweep near a pole (issue 18,
bench/opdb_sweep_alldtypes.md, group A): the op that showed the class, the
check that now passes, and mpmath saying the formula is right there; and a
formula that is wrong by a little near the same pole, still caught.
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="opinfo.torchdb adapts PyTorch's op_db; "
                            "torch is not installed")
pytest.importorskip("expecttest", reason="PyTorch's op_db imports expecttest, which is "
                    "not installed (pip install expecttest)")
mpmath = pytest.importorskip("mpmath", reason="the true derivatives come from mpmath")

import gradcheck  # noqa: E402
from gradcheck.evaluation import Evaluator  # noqa: E402
from gradcheck.problem import Problem  # noqa: E402
from gradcheck.widening import second_differences  # noqa: E402
from opinfo import torchdb  # noqa: E402

U32 = 2.0 ** -24
#: digamma's op_db sample 0 in float32, coordinate 9: 0.0031 from the pole at -6
NEAR_POLE = -5.996856212615967


def test_second_differences_shrink_their_step_near_a_pole():
    # the first step (2**-10 of |x|, 0.0059) straddles the pole 0.0031 away
    x = torch.tensor([NEAR_POLE, 2.5], dtype=torch.float64, requires_grad=True)
    second, _ = second_differences(Evaluator(Problem(torch.digamma, (x,))))
    H = np.diag(second[0, 0])
    mpmath.mp.dps = 30
    true = [float(mpmath.polygamma(2, v)) for v in x.tolist()]
    np.testing.assert_allclose(H, true, rtol=1e-3)


def test_digamma_near_a_pole_in_float32_is_right_within_a_rounding_of_its_input():
    entry = torchdb.get("digamma")
    sample = entry.sample(0, torch.float32)
    call = entry.call(sample)
    x = call.inputs[0]
    assert float(x.detach()[9]) == NEAR_POLE
    for check in ("reverse", "forward"):
        report = gradcheck.check(call.func, call.inputs, name="digamma", seed=0,
                                 **entry.adcheck_options(check, torch.float32, precise=True))
        assert report.passed, report.message()
    # torch's float32 trigamma is 1000 u from the truth there, yet it is the truth at
    # an input moved by a quarter of a rounding (its reflection formula multiplies
    # by pi rounded to float32): a right formula at a condition number of 3800
    leaf = x.detach().clone().requires_grad_()
    (grad,) = torch.autograd.grad(torch.digamma(leaf).sum(), leaf)
    mpmath.mp.dps = 30
    true = mpmath.polygamma(1, NEAR_POLE)
    relative = abs(float(grad[9]) - float(true)) / float(true)
    moved = (float(grad[9]) - float(true)) / float(mpmath.polygamma(2, NEAR_POLE) * NEAR_POLE)
    assert relative > 500 * U32
    assert abs(moved) < U32 / 2


class _OffTrigamma(torch.autograd.Function):
    """digamma whose derivative is off by a relative 1e-3."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.digamma(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * torch.polygamma(1, x) * (1 + 1e-3)


def test_a_derivative_off_by_1e_3_near_the_pole_is_still_caught_in_float32():
    x = torch.tensor([NEAR_POLE, -2.3150, 3.0175], dtype=torch.float32, requires_grad=True)
    report = gradcheck.check(_OffTrigamma.apply, (x,), precise=True)
    assert not report.passed
    assert report.failures[0].where == (0, 0)
