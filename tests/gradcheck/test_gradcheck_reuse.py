"""An expected Jacobian is shared between checks only where the caller says the
function is one computation (``gradcheck.core.reuse.shared``, which the sweep
enters per sample); a user's repeated ``check`` calls are each judged afresh."""
import numpy as np
import pytest

from adcheck import gradcheck
from adcheck.gradcheck.core.reuse import shared

torch = pytest.importorskip("torch", reason="the stateful function is a torch.autograd.Function")


def _scaled_by_state():
    state = {"s": 2.0}

    class Scaled(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * state["s"]

        @staticmethod
        def backward(ctx, grad):
            return grad * 2.0            # right only while state["s"] == 2
    return Scaled.apply, state


def test_a_function_whose_state_changed_is_judged_again():
    func, state = _scaled_by_state()
    x = torch.tensor([0.3, -1.2, 2.0], dtype=torch.float64, requires_grad=True)
    assert gradcheck.check(func, (x,), precise=True).passed
    state["s"] = 1.0
    # finite differences of the changed forward: slope 1, against the backward's 2
    h = 1e-6
    slope = (func(x.detach() + h) - func(x.detach() - h)) / (2 * h)
    assert np.allclose(slope.numpy(), 1.0)
    assert not gradcheck.check(func, (x,), precise=True).passed


def test_inside_shared_a_second_check_of_the_same_point_differentiates_nothing_again():
    x = torch.tensor([0.3, -1.2, 2.0, 0.7], dtype=torch.float64, requires_grad=True)
    alone = gradcheck.check(torch.sin, (x,), precise=True, check_forward_ad=True)
    with shared():
        first = gradcheck.check(torch.sin, (x,), precise=True, check_forward_ad=True)
        second = gradcheck.check(torch.sin, (x,), precise=True, check_forward_ad=True)
        moved = gradcheck.check(torch.sin, (x.detach() + 0.5).requires_grad_(), precise=True,
                                check_forward_ad=True)
    assert first.passed and second.passed and moved.passed
    assert first.counts["function"] == alone.counts["function"]
    # the second only runs the function for its jvps and its own checks: no differences
    assert second.counts["function"] < first.counts["function"] / 2
    assert moved.counts["function"] == alone.counts["function"]     # another point


def test_leaving_shared_forgets_what_it_kept():
    x = torch.tensor([0.3, -1.2], dtype=torch.float64, requires_grad=True)
    with shared():
        inside = gradcheck.check(torch.sin, (x,), precise=True)
    after = gradcheck.check(torch.sin, (x,), precise=True)
    assert after.counts["function"] == inside.counts["function"]
