"""Probed second-order checks of low-precision formulas (``gradcheck.large.lowprobed``).

A wrong second derivative must still be caught when the check compares a few
random directions instead of whole Jacobians: a ``torch.autograd.Function``
whose double backward is off by a relative amount well above the dtype's
rounding (1e-4 in float32, a tenth in bfloat16 and float16), in reverse over
reverse and forward over reverse; the same Function with the right double
backward, and torch's own formulas, pass; and the report says the check was
probed and states the odds that a single wrong entry escapes.
"""
from __future__ import annotations

import numpy as np
import pytest

from adcheck.gradcheck import api, check
from adcheck.gradcheck.large.lowprobed import stated_relative

torch = pytest.importorskip("torch")

#: (dtype name, relative error of the double backward that must be caught)
PLANTED = [("float32", 1e-4), ("bfloat16", 0.1), ("float16", 0.1)]
SIDES = {"reverse": {"check_backward_ad": True},
         "forward": {"check_backward_ad": False, "check_forward_ad": True}}


def _sin_with(rel: float):
    """sin as a Function whose backward is a Function whose own backward (the
    second derivative, -sin) is ``1 + rel`` times the truth."""
    class SinBackward(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, g):
            ctx.save_for_backward(x, g)
            ctx.save_for_forward(x, g)
            return g * torch.cos(x)

        @staticmethod
        def backward(ctx, gg):
            x, g = ctx.saved_tensors
            return -gg * g * torch.sin(x) * (1 + rel), gg * torch.cos(x)

        @staticmethod
        def jvp(ctx, x_t, g_t):
            x, g = ctx.saved_tensors
            return -x_t * g * torch.sin(x) * (1 + rel) + g_t * torch.cos(x)

    class Sin(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            ctx.save_for_forward(x)
            return torch.sin(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return SinBackward.apply(x, g)

        @staticmethod
        def jvp(ctx, x_t):
            (x,) = ctx.saved_tensors
            return x_t * torch.cos(x)

    return Sin.apply


def _mixed(rel: float):
    """A dense mixing of the custom sin: every output depends on every input."""
    sin = _sin_with(rel)
    mixing = torch.tensor(np.random.default_rng(3).uniform(-1, 1, (6, 12)))

    def f(x):
        return mixing.to(x.dtype) @ sin(x)
    return f


def _x(dtype_name: str):
    values = np.random.default_rng(1).uniform(-2, 2, 12)
    return torch.tensor(values, dtype=getattr(torch, dtype_name), requires_grad=True)


def _probed(f, x, side: str):
    return check(f, (x,), precise=True, order=2, seed=0, jacobian="probed", probes=8,
                 **SIDES[side])


@pytest.mark.parametrize("side", list(SIDES))
@pytest.mark.parametrize("dtype_name, rel", PLANTED)
def test_a_wrong_second_derivative_is_caught_when_probed(dtype_name, rel, side, monkeypatch):
    right = _probed(_mixed(0.0), _x(dtype_name), side)
    assert right.passed, right.message()
    assert right.plan == "probed"
    # a failed probed check this small is judged again on whole Jacobians
    # (api._settled_densely), which fail it too; the cells' own verdict first
    settled = _probed(_mixed(rel), _x(dtype_name), side)
    assert not settled.passed and settled.plan == "dense"
    assert settled.settled.endswith("failed too")
    monkeypatch.setattr(api, "SETTLE_COORDINATES", 0)
    wrong = _probed(_mixed(rel), _x(dtype_name), side)
    assert not wrong.passed, wrong.message()
    assert wrong.plan == "probed"


@pytest.mark.parametrize("dtype_name", ["float32", "bfloat16", "float16"])
def test_the_report_states_the_escape_odds_at_the_dtypes_resolution(dtype_name):
    report = _probed(_mixed(0.0), _x(dtype_name), "forward")
    epsilon = float(torch.finfo(getattr(torch, dtype_name)).eps)
    assert report.escape["relative_error"] == pytest.approx(stated_relative(epsilon))
    assert 0.0 <= report.escape["forward"] < 0.5
    assert "escapes with probability" in report.message()


def _softmax_matmul(x, w):
    return torch.softmax(x @ w, dim=-1)


@pytest.mark.parametrize("side", list(SIDES))
@pytest.mark.parametrize("dtype_name", ["float32", "bfloat16", "float16"])
def test_torchs_own_second_derivatives_pass_when_probed(dtype_name, side):
    rng = np.random.default_rng(5)
    dtype = getattr(torch, dtype_name)
    x = torch.tensor(rng.uniform(-1, 1, (3, 4)), dtype=dtype, requires_grad=True)
    w = torch.tensor(rng.uniform(-1, 1, (4, 5)), dtype=dtype, requires_grad=True)
    for f, inputs in ((_softmax_matmul, (x, w)), (torch.nn.functional.gelu, (x,)),
                      (lambda a: torch.nn.functional.layer_norm(a, (4,)), (x,))):
        report = check(f, inputs, precise=True, order=2, seed=0, jacobian="probed", probes=8,
                       **SIDES[side])
        assert report.passed, report.message()
        assert report.plan == "probed"


def test_a_first_order_low_precision_check_keeps_whole_jacobians():
    report = check(torch.sin, (_x("float32"),), precise=True, seed=0, jacobian="probed")
    assert report.passed and report.plan == "dense"
