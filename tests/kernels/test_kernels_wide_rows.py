"""A norm's backward without its mean term, at a width real models use.

The classic bug of a hand-written RMS or layer norm backward drops the term
that flows through the mean: the Jacobian keeps its diagonal and loses every
off-diagonal entry. At 16 features the diagonal error is large; at 256 it is
a few percent of the largest entry, and the judgement depends on how much
rounding the reference run op by op in the dtype is allowed. That reference
is off from float64 by several roundings (one per op), which the rounding
model took for partial sums rounded to the dtype and so allowed every entry
``log2(n)`` units of the dtype more than torch's reductions (which
accumulate in float32) lose: a float16 kernel missing the term passed.

The bug's size is measured independently: the kernel and the reference in
float64, their Jacobians by ``torch.autograd.functional.jacobian``.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from adcheck.gradcheck import kernels  # noqa: E402
from adcheck.gradcheck.kernels import rounding  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures"))
from rms_ops import DroppedMean, RMSNorm, rms_reference  # noqa: E402

WIDTH = 256


def _inputs(dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(3, WIDTH, generator=g).to(dtype).requires_grad_()
    w = (1 + 0.1 * torch.randn(WIDTH, generator=g)).to(dtype).requires_grad_()
    return x, w


def _bug_size(inputs) -> float:
    """The dropped term's error on the input's vjp block in float64, relative
    to the block's largest entry."""
    wide = tuple(t.detach().double() for t in inputs)
    mine = torch.autograd.functional.jacobian(DroppedMean.apply, wide)[0]
    ref = torch.autograd.functional.jacobian(rms_reference, wide)[0]
    return float((mine - ref).abs().max() / ref.abs().max())


@pytest.mark.parametrize("seed", range(6))
def test_float16_kernel_without_the_mean_term_fails_at_256_features(seed):
    inputs = _inputs(torch.float16, seed)
    size = _bug_size(inputs)
    report = kernels.check(DroppedMean.apply, inputs, against=rms_reference)
    assert not report.passed, kernels.summary(report)
    failing = [r for r in report.failures if r.in_idx == 0]
    assert failing, kernels.summary(report)
    # found above the resolution it states, and the bug is that large
    assert failing[0].precision.resolution < size


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_resolution_stated_for_the_bug_is_honest(dtype):
    """Where the check passes the bug (bfloat16's coarser rounding), it states a
    resolution above the bug's size: it never claims to resolve what it missed."""
    inputs = _inputs(dtype)
    size = _bug_size(inputs)
    report = kernels.check(DroppedMean.apply, inputs, against=rms_reference)
    for r in report.results:
        if r.in_idx == 0 and r.passed and r.precision is not None:
            assert r.precision.resolution > size, kernels.summary(report)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_correct_kernels_pass_at_256_features(dtype, seed):
    """No false alarm from the tighter sums: the fused kernel, and the reference
    itself run op by op in the dtype (the computation that rounds the most)."""
    inputs = _inputs(dtype, seed)
    for kernel in (RMSNorm.apply, rms_reference):
        report = kernels.check(kernel, inputs, against=rms_reference)
        assert report.passed, kernels.summary(report)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_torch_cpu_accumulates_wider_than_the_dtype(dtype):
    assert rounding.accumulates_wider(torch.device("cpu"), dtype)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_partial_sums_rounded_to_the_dtype_are_told_apart(dtype):
    """The criterion of ``accumulates_wider`` against sums made here: one
    accumulated in float32 and rounded once passes it, one whose every partial
    sum is rounded to the dtype does not."""
    terms = torch.from_numpy(np.random.default_rng(0).uniform(
        1.0, 2.0, rounding.ACCUMULATION_TERMS)).to(dtype)
    exact = terms.double().sum()
    once = terms.float().sum().to(dtype)
    rounded = torch.zeros((), dtype=dtype)
    for t in terms:
        rounded = rounded + t
    assert rounding.within_one_rounding(once, exact, dtype)
    assert not rounding.within_one_rounding(rounded, exact, dtype)
