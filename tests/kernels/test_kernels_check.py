"""``kernels.check(kernel, inputs, against=ref)``: verdicts on small kernels.

Every bug's size is measured here independently of the check: the buggy
kernel and the reference are both run in float64 and their Jacobians taken
by torch.autograd.functional.jacobian; the check must find a bug above the
resolution it states and must not claim one below it.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from adcheck.gradcheck import kernels  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures"))
from rms_ops import RMSNorm, rms_reference  # noqa: E402

DTYPES = (torch.bfloat16, torch.float16, torch.float32)


def _inputs(dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(4, 16, generator=g).to(dtype).requires_grad_()
    w = (1 + 0.1 * torch.randn(16, generator=g)).to(dtype).requires_grad_()
    return x, w


def _bug_size(kernel, inputs, in_idx):
    """The kernel's error in float64 on the vjp block of input ``in_idx``,
    relative to the block's largest entry."""
    wide = tuple(t.detach().double() for t in inputs)
    mine = torch.autograd.functional.jacobian(kernel, wide)[in_idx]
    ref = torch.autograd.functional.jacobian(rms_reference, wide)[in_idx]
    return float((mine - ref).abs().max() / ref.abs().max())


def _reverse(report, in_idx):
    return next(r for r in report.results if r.check == "reverse" and r.in_idx == in_idx)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_a_correct_fused_kernel_passes_in_every_dtype(dtype):
    report = kernels.check(RMSNorm.apply, _inputs(dtype), against=rms_reference)
    assert report.passed, kernels.summary(report)
    checked = {r.check for r in report.results}
    assert checked == {"value", "reverse"}          # a Function without jvp: reverse only
    assert any("defines no jvp" in note for note in report.coverage["kernel"])
    assert all(r.precision.resolution > 0 for r in report.results)


@pytest.mark.parametrize("dtype,scale", [(torch.float32, 1.003), (torch.float16, 1.01),
                                         (torch.bfloat16, 1.05), (torch.bfloat16, 1.003)],
                         ids=["f32-3e-3", "f16-1e-2", "bf16-5e-2", "bf16-3e-3"])
def test_a_scaled_gradient_is_found_above_the_resolution_and_only_there(dtype, scale,
                                                                        monkeypatch):
    monkeypatch.setattr(RMSNorm, "scale", scale)
    inputs = _inputs(dtype)
    report = kernels.check(RMSNorm.apply, inputs, against=rms_reference,
                           check_forward_ad=False)
    weight = _reverse(report, 1)
    size = _bug_size(RMSNorm.apply, inputs, 1)
    assert size > 0.5 * (scale - 1)          # the bug is there, as planted
    if size > 1.5 * weight.precision.resolution:
        assert not weight.passed, kernels.summary(report)
    elif weight.passed:                       # below: a pass that says it could not see it
        assert size < 2 * weight.precision.resolution
        assert "not detectable at this precision" in kernels.summary(report)


def test_the_bf16_3e3_bug_is_below_the_stated_resolution(monkeypatch):
    # bfloat16's unit roundoff is 3.9e-3: a 3e-3 error cannot be told from rounding
    monkeypatch.setattr(RMSNorm, "scale", 1.003)
    report = kernels.check(RMSNorm.apply, _inputs(torch.bfloat16), against=rms_reference,
                           check_forward_ad=False)
    assert _reverse(report, 1).precision.resolution > 3e-3


def test_a_kernel_of_plain_ops_is_judged_in_both_modes():
    def fused(x, w):
        xf = x.float()
        return (xf * torch.rsqrt((xf * xf).mean(-1, keepdim=True) + 1e-6) * w.float()).to(x.dtype)
    report = kernels.check(fused, _inputs(torch.bfloat16), against=rms_reference)
    assert report.passed and {"reverse", "forward"} <= set(report.jacobians)


def test_a_wrong_forward_is_a_value_failure():
    def shifted(x, w):
        return (rms_reference(x.float(), w.float()) + 0.05).to(x.dtype)
    report = kernels.check(shifted, _inputs(torch.float16), against=rms_reference)
    failing = {r.check for r in report.failures}
    assert "value" in failing and "reverse" not in failing


def test_assert_gradients_judges_a_kernel_against_its_reference(monkeypatch):
    from pytest_adcheck import assert_gradients
    report = assert_gradients(RMSNorm.apply, _inputs(torch.float16), against=rms_reference)
    assert report.passed and "float64 reference" in report.jacobians
    monkeypatch.setattr(RMSNorm, "scale", 2.0)
    with pytest.raises(AssertionError, match=r"FAIL vjp \(reverse mode\), output 0, input 1"):
        assert_gradients(RMSNorm.apply, _inputs(torch.float16), against=rms_reference)


def test_a_kernel_rounding_op_by_op_is_allowed_that_rounding_and_told_so():
    # the reference itself run in bfloat16: every intermediate rounded, a correct kernel
    report = kernels.check(rms_reference, _inputs(torch.bfloat16), against=rms_reference)
    assert report.passed, kernels.summary(report)
    coarse = [r for r in report.results if r.detail and "op by op in the dtype" in r.detail]
    assert coarse       # some comparison needed that rounding, and says so


def test_a_fused_kernel_is_judged_within_one_rounding():
    fused = kernels.check(RMSNorm.apply, _inputs(torch.bfloat16), against=rms_reference)
    assert fused.passed and not any(r.detail for r in fused.results)
    loose = kernels.check(rms_reference, _inputs(torch.bfloat16), against=rms_reference)
    finest = max(r.precision.resolution for r in fused.results)
    assert finest < max(r.precision.resolution for r in loose.results)


def test_a_kernel_declared_fused_is_judged_within_one_rounding_only():
    declared = kernels.check(RMSNorm.apply, _inputs(torch.float16), against=rms_reference,
                             fused=True)
    auto = kernels.check(RMSNorm.apply, _inputs(torch.float16), against=rms_reference)
    assert declared.passed and declared.settings["fused"] is True
    # one computation's allowance: never wider than auto's, whose failures fall back
    for mine, theirs in zip(declared.results, auto.results):
        assert mine.precision.resolution <= theirs.precision.resolution * (1 + 1e-12)
    with pytest.raises(ValueError, match="fused must be None, True or False"):
        kernels.check(RMSNorm.apply, _inputs(torch.float16), against=rms_reference, fused="yes")
