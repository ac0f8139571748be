"""The registry sweep: every OpInfo through every check it claims.

Each case runs one sample of one op in one dtype through gradcheck exactly
as ``adcheck ops`` does (``runner.checks.check_sample``: the sample as a
function of its differentiable tensors, one ``gradcheck.check`` per check,
the OpInfo's tolerances and known failures). The checks: reverse and
forward mode against finite differences, fast mode (one random projection
each way), second order (reverse over reverse, forward over reverse), and
the mpmath reference; complex autograd is the complex128 case of each.

A claimed check must pass (or be a declared known failure that still
fails); an unclaimed one must be skipped, never silently run. Which
checks are unclaimed, and that they really are missing, is
test_capabilities.py's subject. The default run takes two representative
samples per (op, dtype); ``ADCHECK_EXHAUSTIVE=1`` takes all (sweep_cases).
"""
from __future__ import annotations

import pytest

from adcheck import opinfo
from adcheck.runner.checks import CHECK_NAMES, Policy, check_sample
from adcheck.runner.tasks import Settings

from sweep_cases import sample_cases

#: the OpInfo's own (torch-style) tolerances, a fixed probe seed: deterministic
SETTINGS = Settings(CHECK_NAMES, Policy(precise=False, engine="refengine", seed=0))
#: the mode flag each check needs (``reference`` and ``fast`` are reverse-mode checks)
MODE = {"reverse": "reverse", "forward": "forward", "fast": "reverse", "gradgrad": "gradgrad",
        "fwgrad_bwgrad": "fwgrad_bwgrad", "reference": "reverse"}


def claimed(info, check: str, dtype, sample) -> bool:
    """Whether the OpInfo says ``check`` applies to this sample."""
    if not info.supports(MODE[check], dtype):
        return False
    if check == "reference":
        return info.mpmath_ref is not None and sample.output_process_fn_grad is opinfo.identity
    return True


def _differentiable(sample) -> list:
    return [t for t in sample.tensors() if t.requires_grad]


def _flat(value) -> list:
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _flat(v)]
    return [value] if hasattr(value, "numel") else []


def _jacobian_is_empty(info, sample) -> bool:
    """No input or no output entry (``narrow`` to length 0): a Jacobian without
    entries, where gradcheck rightly says there is nothing to check."""
    if all(t.numel() == 0 for t in _differentiable(sample)):
        return True
    return all(t.numel() == 0 for t in _flat(sample.output_process_fn_grad(info(sample))))


def _problems(info, dtype, sample) -> list:
    results = [r for r, _ in check_sample(info, sample, dtype, SETTINGS)]
    by_check = {r.check: r for r in results}
    setup = by_check.get("setup")
    if setup is not None:
        return [f"the sample could not be run: {setup.message}"]
    problems = []
    empty = _jacobian_is_empty(info, sample)
    for check in CHECK_NAMES:
        result = by_check[check]
        if not claimed(info, check, dtype, sample):
            if result.status != "skipped":
                problems.append(f"{check}: not claimed, yet it ran ({result.status})")
        elif result.status == "skipped" and not empty:
            problems.append(f"{check}: claimed but skipped ({result.message})")
        elif result.status in ("failed", "error"):
            problems.append(f"{check}: {result.status}: {result.message}")
        elif result.status == "passed" and result.message:
            problems.append(f"{check}: {result.message}")   # a stale known failure
    return problems


@pytest.mark.parametrize("info, dtype, index", sample_cases())
def test_every_claimed_check_passes(info, dtype, index):
    sample = info.sample(index, dtype, requires_grad=True)
    if not _differentiable(sample):
        assert not info.supports_autograd, (
            f"{info.name} {sample!r}: claims autograd but no tensor of the sample requires grad")
        return
    problems = _problems(info, dtype, sample)
    assert not problems, f"{info.name} {dtype.name} {sample!r}:\n  " + "\n  ".join(problems)
