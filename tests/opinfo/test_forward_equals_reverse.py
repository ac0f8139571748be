"""Issue 5's exactness criterion: for every op and sample, the forward-mode
Jacobian equals the reverse-mode Jacobian to 1e-12 relative.

Both are exact derivatives of the same rules, so they may differ only by
rounding: ``max |J_forward - J_reverse| <= 1e-12 * max(|J_reverse|, |J_forward|)``
for every (output, input) block, in float64 and, where the op claims complex
autograd, complex128. Every sample runs, the samples at non-differentiable
points (``special_inputs``) too: there a documented rule fixes the
derivative, and both modes must apply the same one (an infinite entry must
be infinite in both, a NaN NaN in both). One allowance: where a derivative
is infinite (sqrt at 0), the Jacobians built from unit vectors hold
``0 * inf = NaN`` off the diagonal, at transposed places in the two modes
(torch's do the same), so in a block with an infinite entry a NaN in one
mode is accepted where the other mode is finite.
"""
from __future__ import annotations

import numpy as np
import pytest

from adcheck import gradcheck
from adcheck import opinfo
import adcheck.refengine as E
from adcheck.runner.samplecall import SampleCall

RELATIVE = 1e-12
DTYPES = (E.float64, E.complex128)

CASES = [pytest.param(info, dtype, id=f"{info.name}-{dtype.name}")
         for info in opinfo.op_db for dtype in DTYPES if info.supports("forward", dtype)]


def block_mismatch(forward: np.ndarray, reverse: np.ndarray) -> str | None:
    """Why two Jacobian blocks are not equal to ``RELATIVE``, or ``None``."""
    finite = np.isfinite(forward) & np.isfinite(reverse)
    agree = finite | (forward == reverse) | (np.isnan(forward) & np.isnan(reverse))
    if np.isinf(forward).any() or np.isinf(reverse).any():
        # 0 * inf (see the module text): a NaN in one mode where the other is finite
        agree |= (np.isnan(forward) & np.isfinite(reverse)) | \
            (np.isnan(reverse) & np.isfinite(forward))
    if not agree.all():
        where = tuple(int(i) for i in np.argwhere(~agree)[0])
        return f"non-finite entries differ at {list(where)}: {forward[where]} vs {reverse[where]}"
    scale = max(np.abs(forward[finite]).max(initial=0.0), np.abs(reverse[finite]).max(initial=0.0))
    error = np.abs(forward[finite] - reverse[finite]).max(initial=0.0)
    if error > RELATIVE * scale:
        return f"max |difference| {error:.3e} > {RELATIVE:g} * max |entry| ({scale:.3e})"
    return None


def _samples(info, dtype):
    yield from info.sample_inputs(dtype, requires_grad=True)
    yield from info.special_inputs(dtype, requires_grad=True)


def _declared(info, dtype, sample):
    return info.known_failure("forward", dtype, sample) or \
        info.known_failure("reverse", dtype, sample)


@pytest.mark.parametrize("info, dtype", CASES)
def test_forward_jacobian_equals_reverse_jacobian(info, dtype):
    problems, compared = [], 0
    for sample in _samples(info, dtype):
        call = SampleCall(info, sample)
        if not call.inputs or _declared(info, dtype, sample) is not None:
            continue   # nothing to differentiate, or a rule declared wrong (with its reason)
        forward = gradcheck.forward_jacobian(call.func, call.inputs)
        reverse = gradcheck.reverse_jacobian(call.func, call.inputs)
        assert set(forward.keys()) == set(reverse.keys()), f"{sample!r}: different blocks"
        for key in reverse.blocks:
            compared += 1
            why = block_mismatch(forward[key], reverse[key])
            if why is not None:
                problems.append(f"{sample!r} out_idx {key[0]}, in_idx {key[1]}: {why}")
    assert compared, f"{info.name} {dtype.name}: claims forward mode but no sample was compared"
    assert not problems, f"{info.name} {dtype.name}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("forward, reverse, equal", [
    (np.array([[1.0, 2.0]]), np.array([[1.0, 2.0 + 1e-13]]), True),
    (np.array([[1.0, 2.0]]), np.array([[1.0, 2.0 + 1e-10]]), False),
    (np.array([[np.inf, 0.0]]), np.array([[np.inf, 0.0]]), True),
    (np.array([[np.inf, 0.0]]), np.array([[np.nan, 0.0]]), False),
    (np.array([[np.inf, np.nan]]), np.array([[np.inf, 0.0]]), True),
    (np.array([[np.inf, 0.0]]), np.array([[-np.inf, 0.0]]), False),
    (np.array([[1.0, np.nan]]), np.array([[1.0, 0.0]]), False),
    (np.zeros((0, 3)), np.zeros((0, 3)), True),
])
def test_the_comparison_itself(forward, reverse, equal):
    assert (block_mismatch(forward, reverse) is None) is equal
