"""Who is right when adcheck fails a sample: torch's verdict and independent evidence.

PyTorch's gradient tests check in double precision only, so a failure of a
float64 or complex128 sample is a disagreement when torch's gradcheck, run
as its test runs it, passes the same sample. ``dispute`` says which: torch
fails it too (they agree), or torch passes it, and then what an independent
computation of the disputed entry shows. That computation shares no code
with adcheck's Jacobians: a fourth-order central difference of the one
output coordinate in the one input coordinate, at two steps a factor of two
apart, evaluated with torch in float64. It settles the entry when the two
steps agree far more closely than the analytical and numerical values
differ. Complex entries and second-order checks get torch's verdict and
adcheck's numbers only.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

#: dtypes PyTorch's gradient tests run gradcheck in
DOUBLE = ("float64", "complex128")
#: the two steps, relative to ``max(1, |x|)``: large enough that rounding of a
#: float64 output (about 1e-16 / 1e-4) stays far below a 1e-8 relative error,
#: small enough that a fourth-order difference is accurate to about 1e-16
STEPS = (2.0 ** -13, 2.0 ** -14)
#: how much farther from the analytical value than from the numerical one the
#: independent difference must be, in units of its own uncertainty, to settle it
DECISIVE = 10.0


def dispute(func, inputs, runs: list, dtype_name: str, report, reproduce: str) -> str | None:
    """One line on a failed check of ``func`` at ``inputs``: whether torch's
    gradcheck (the calls ``runs``, as ``call.torch_runs`` lists them) agrees,
    and when it does not, the evidence for the disputed entry. ``None`` for a
    dtype torch's tests do not gradcheck. ``reproduce`` is the command that
    shows the sample. A failure found at an explored point (``Result.point``)
    is disputed there, not at the sample, where the check passed."""
    from adcheck.opinfo.torchdb.call import torch_verdict
    if dtype_name not in DOUBLE:
        return None
    failure = _disputed(report)
    point = _explored(report, failure)
    this = "this sample"
    if point is not None:
        inputs, this = _at(inputs, point.arrays), "the explored point"
        # (the point's code is on the failure's own line: "reproduce with")
        reproduce = "the explored point's inputs, as the failure's 'reproduce with' gives them"
    verdict = torch_verdict(SimpleNamespace(func=func, inputs=tuple(inputs)), runs)
    if not verdict.passed:
        first = " ".join(verdict.message.split())[:240]
        return f"torch's gradcheck fails {this} too ({verdict.error}: {first})"
    fast = runs[0][1].get("fast_mode", False)
    head = f"torch's {runs[0][0]} (fast_mode={fast}, as PyTorch's test runs it) passes {this}"
    if point is not None and point.one_sided:
        return (f"{head}; the point is a kink or a tie, where a central difference is no "
                f"derivative (torch's gradcheck takes one): the one-sided derivatives above "
                f"decide. Reproduce: {reproduce}")
    if failure is None:
        return f"{head}; the failure is not about one Jacobian entry, so no independent " \
               f"value settles it. Reproduce: {reproduce}"
    return f"{head}. {_evidence(func, inputs, failure)}. Reproduce: {reproduce}"


def _explored(report, failure):
    """The explored point (``gradcheck.explore.point.Explored``) of ``failure``,
    else of the report's first failure found at one, or ``None``."""
    if failure is not None:
        return failure.point
    if report is None:
        return None
    return next((r.point for r in report.failures if r.point is not None), None)


def _at(inputs, arrays: dict) -> list:
    """``inputs`` with those of ``arrays`` (by index) replaced, as exploring built them."""
    from adcheck.gradcheck.engines import engine_for
    from adcheck.gradcheck.explore.point import rebuilt
    return rebuilt(engine_for(inputs), inputs, arrays)


def _disputed(report):
    """The first failure comparing a first derivative with finite differences."""
    if report is None:
        return None
    for failure in report.failures:
        if failure.against == "numerical" and failure.order == 1 and failure.where is not None \
                and failure.expected is not None and np.ndim(failure.expected) == 2:
            return failure
    return None


def _evidence(func, inputs, failure) -> str:
    row, col = failure.where
    analytical = complex(failure.actual[row, col])
    numerical = complex(failure.expected[row, col])
    if failure.origin is not None:
        row, col = row + failure.origin[0], col + failure.origin[1]
    where = f"output {failure.out_idx}[{row}] by input {failure.in_idx}[{col}]"
    values = f"AD {_show(analytical)}, adcheck's extrapolated difference {_show(numerical)}"
    x = inputs[failure.in_idx]
    if x.is_complex() or np.iscomplexobj(failure.expected) or np.iscomplexobj(failure.actual):
        return f"Disputed entry {where}: {values}; complex entries get no independent value"
    estimates = [_difference(func, inputs, failure.out_idx, failure.in_idx, row, col, step)
                 for step in STEPS]
    if not all(np.isfinite(estimates)):
        return f"Disputed entry {where}: {values}; the independent difference is not finite"
    y, spread = estimates[-1], abs(estimates[0] - estimates[1])
    uncertain = max(spread, 1e-15 * max(abs(y), 1e-300))
    text = (f"Disputed entry {where}: {values}, an independent fourth-order difference "
            f"{y:.17g} ± {spread:.1e} (two steps' spread)")
    off_ad, off_fd = abs(analytical.real - y), abs(numerical.real - y)
    if off_ad > DECISIVE * max(uncertain, off_fd):
        relative = off_ad / max(abs(y), 1e-300)
        return (f"{text}: AD is off by {relative:.1e} relative, within torch's atol=1e-05 "
                "and rtol=0.001: a PyTorch formula bug its gradcheck misses")
    if off_fd > DECISIVE * max(uncertain, off_ad):
        return f"{text}: it agrees with AD, so this failure is a false alarm of adcheck's"
    return f"{text}: not decisive"


def _difference(func, inputs, out_idx: int, in_idx: int, row: int, col: int,
                relative_step: float) -> float:
    """d output[out_idx].flat[row] / d inputs[in_idx].flat[col] by a fourth-order
    central difference, perturbing the one element in place of a copy (the
    copy keeps the input's strides, which as_strided-like ops read)."""
    import torch
    x = inputs[in_idx]
    index = np.unravel_index(col, tuple(x.shape)) if x.dim() else ()
    step = relative_step * max(1.0, abs(float(x.detach()[index])))

    def value(delta: float) -> float:
        moved = x.detach().clone()
        moved[index] += delta
        args = list(inputs)
        args[in_idx] = moved
        with torch.no_grad():
            out = func(*args)
        out = out if isinstance(out, (tuple, list)) else (out,)
        return float(out[out_idx].detach().reshape(-1)[row])

    near = value(step) - value(-step)
    far = value(2 * step) - value(-2 * step)
    return (8 * near - far) / (12 * step)


def _show(value: complex) -> str:
    return f"{value.real:.17g}" if value.imag == 0 else f"{value:.17g}"
