"""The checks of one sample share the quick pass's screens (``quick.sharing``,
opened by ``runner.checks.run_checks``): a point screened by the reverse check
is not evaluated again by the forward or reference check, yet each mode's
formula is still compared on its own, so a wrong jvp beside a right vjp is
still sent to the full check."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from adcheck.gradcheck.engines import engine_for  # noqa: E402
from adcheck.gradcheck.explore import quick  # noqa: E402

EPS = float(np.finfo(np.float64).eps)


def _x(*values):
    return torch.tensor(values, dtype=torch.float64, requires_grad=True)


class _WrongJvp(torch.autograd.Function):
    """sin whose backward is cos (right) and whose jvp is 2 cos (wrong)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.x = x.detach()
        return torch.sin(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * torch.cos(x)

    @staticmethod
    def jvp(ctx, t):
        return t * 2 * torch.cos(ctx.x)


class _Counted:
    """``func``, counting its calls (every evaluation the screen makes)."""

    def __init__(self, func):
        self.func, self.calls = func, 0

    def __call__(self, *args):
        self.calls += 1
        return self.func(*args)


def _screen(func, ins, modes, seed=0):
    return quick.screen(engine_for(ins), func, ins, list(range(len(ins))), set(modes),
                        np.random.default_rng(seed), EPS)


def test_a_point_screened_once_is_not_evaluated_again_by_the_next_checks():
    alone, shared = _Counted(torch.sin), _Counted(torch.sin)
    ins = [_x(0.3, -1.2, 2.0)]
    verdicts = [_screen(alone, ins, m) for m in (("reverse",), ("forward",),
                                                  ("reverse", "forward"))]
    alone_calls = alone.calls
    with quick.sharing():
        shared_verdicts = [_screen(shared, ins, m) for m in (("reverse",), ("forward",),
                                                             ("reverse", "forward"))]
    assert verdicts == shared_verdicts == ["pass"] * 3     # sin' = cos: a right formula
    # alone: each screen evaluates the point and both one-sided quotients (3 calls,
    # the jvp one more); shared: the first screen's 3, the forward check's jvp, no more
    assert alone_calls == 3 + 4 + 4 and shared.calls == 3 + 1


def test_each_mode_is_still_compared_on_its_own_at_a_shared_point():
    ins = [_x(0.3, -1.2, 2.0)]
    with quick.sharing():
        assert _screen(_WrongJvp.apply, ins, ("reverse",)) == "pass"
        # the jvp is twice the difference quotients (2 cos against cos): to the full check
        assert _screen(_WrongJvp.apply, ins, ("forward",)) == "judge"
        assert _screen(_WrongJvp.apply, ins, ("reverse", "forward")) == "judge"
    # the same verdicts as each check screening alone
    assert _screen(_WrongJvp.apply, ins, ("forward",)) == "judge"


def test_another_point_or_function_is_not_shared():
    counted = _Counted(torch.sin)
    with quick.sharing():
        _screen(counted, [_x(0.3, -1.2, 2.0)], ("reverse",))
        _screen(counted, [_x(0.3, -1.2, 2.5)], ("reverse",))
        assert counted.calls == 6
        other = _Counted(torch.sin)
        _screen(other, [_x(0.3, -1.2, 2.0)], ("reverse",))
        assert other.calls == 3
    # outside the block nothing is kept
    _screen(counted, [_x(0.3, -1.2, 2.0)], ("reverse",))
    assert counted.calls == 9


def test_a_domain_point_is_shared_whatever_the_mode():
    counted = _Counted(torch.log)
    with quick.sharing():
        assert _screen(counted, [_x(-1.0, 2.0)], ("reverse",)) == "domain"   # log(-1): NaN
        assert _screen(counted, [_x(-1.0, 2.0)], ("forward",)) == "domain"
    assert counted.calls == 1
