"""Capability flags are honest both ways.

A claimed capability is exercised: test_sweep.py runs every claimed check
and fails a claimed check that is skipped; here, a claim must be one the
sweep can exercise (complex autograd with a complex dtype listed, a mode
flag only on an op with autograd).

An unclaimed capability is shown to be missing: running it must raise or
fail. ``supports_autograd=False``: no output requires grad (or no input can
require it); ``supports_forward_ad=False``, ``supports_gradgrad=False`` or
``supports_fwgrad_bwgrad=False``: gradcheck's check of that mode raises or
fails; complex autograd not claimed: the reverse-mode check on complex128
inputs raises or fails. An op whose unclaimed capability works is mislabelled.
"""
from __future__ import annotations

import numpy as np
import pytest

from adcheck import gradcheck
from adcheck import opinfo
import adcheck.refengine as E
from adcheck.runner.samplecall import SampleCall

from sweep_cases import sample_indices

#: the gradcheck keywords that exercise one mode (complex autograd: reverse on complex inputs)
MODES = {"reverse": {},
         "forward": {"check_forward_ad": True, "check_backward_ad": False},
         "gradgrad": {"order": 2},
         "fwgrad_bwgrad": {"order": 2, "check_forward_ad": True, "check_backward_ad": False}}
FLAGS = {"forward": "supports_forward_ad", "gradgrad": "supports_gradgrad",
         "fwgrad_bwgrad": "supports_fwgrad_bwgrad", "complex": "supports_complex_autograd"}


def works(func, inputs, mode: str) -> bool:
    """Whether gradcheck's check of ``mode`` runs and passes on ``func`` at ``inputs``."""
    try:
        report = gradcheck.check(func, inputs, seed=0, **MODES[mode])
    except Exception:   # noqa: BLE001 - raising is one way of not supporting a mode
        return False
    return report.passed


def _unclaimed_cases() -> list:
    cases = []
    for info in opinfo.op_db:
        if not info.supports_autograd:
            cases.append(pytest.param(info, "autograd", id=f"{info.name}-autograd"))
            continue
        for mode, flag in FLAGS.items():
            if not getattr(info, flag) or (mode == "complex" and
                                           not any(d.is_complex for d in info.dtypes)):
                cases.append(pytest.param(info, mode, id=f"{info.name}-{mode}"))
    return cases


def _first_sample(info, dtype):
    return info.sample(sample_indices(info, dtype)[0], dtype, requires_grad=True)


def _outputs(value) -> list:
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _outputs(v)]
    return [value] if isinstance(value, E.Tensor) else []


def _autograd_is_missing(info) -> str | None:
    """Why autograd of ``info`` is not missing after all, or ``None``."""
    for dtype in info.dtypes:
        sample = _first_sample(info, dtype)
        if not any(t.requires_grad for t in sample.tensors()):
            continue   # the op takes no floating input: nothing could require grad
        with E.enable_grad():
            out = info(sample)
        if any(t.requires_grad for t in _outputs(out)):
            return f"{dtype.name} {sample!r}: an output requires grad"
    return None


@pytest.mark.parametrize("info, mode", _unclaimed_cases())
def test_an_unclaimed_capability_is_missing(info, mode):
    if mode == "autograd":
        why = _autograd_is_missing(info)
        assert why is None, f"{info.name} declares supports_autograd=False, yet {why}"
        return
    dtype = E.complex128 if mode == "complex" else E.float64
    sample = _first_sample(info, dtype)
    call = SampleCall(info, sample)
    assert call.inputs, f"{info.name} {sample!r}: no input requires grad"
    assert not works(call.func, call.inputs, "reverse" if mode == "complex" else mode), (
        f"{info.name} does not claim {mode} ({FLAGS[mode]}=False or no complex dtype), "
        f"yet gradcheck's {mode} check passes on {dtype.name} {sample!r}: "
        "the flag is dishonest (claim it, or make the op refuse)")


@pytest.mark.parametrize("info", opinfo.op_db, ids=lambda i: i.name)
def test_a_claim_is_one_the_sweep_can_exercise(info):
    if info.supports_complex_autograd:
        assert any(d.is_complex for d in info.dtypes), \
            "claims complex autograd, lists no complex dtype"
    if not info.supports_autograd:
        assert not info.supports_complex_autograd, "claims complex autograd without autograd"
        assert not any(info.supports(m) for m in ("forward", "gradgrad", "fwgrad_bwgrad"))
    assert list(info.sample_func(info, info.dtypes[0])), "has no sample to exercise a claim"


class _SquareWithoutJvp(E.autograd.Function):
    """x**2 with a correct backward and no jvp: forward mode is missing."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return 2 * grad * x


class _SquareOnceDifferentiable(E.autograd.Function):
    """x**2 whose backward leaves the graph (numpy): second order is missing."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return E.tensor(2 * grad.detach().numpy() * x.detach().numpy())


def _x():
    return E.tensor(np.array([0.5, -1.5, 2.0]), requires_grad=True)


def test_the_detector_sees_a_missing_jvp():
    assert not works(_SquareWithoutJvp.apply, (_x(),), "forward")
    assert works(_SquareWithoutJvp.apply, (_x(),), "gradgrad")


def test_the_detector_sees_a_missing_second_derivative():
    assert works(_SquareOnceDifferentiable.apply, (_x(),), "reverse")   # first order is fine
    assert not works(_SquareOnceDifferentiable.apply, (_x(),), "gradgrad")


def test_the_detector_sees_a_working_mode():
    assert works(E.sin, (_x(),), "forward") and works(E.sin, (_x(),), "gradgrad")
