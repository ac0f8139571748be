"""``lowprecision_bench.py calibrate``: the measurement behind ``lowprecision.MARGIN``.

For every registry sample in each low-precision dtype whose function also
runs in float64, the reverse-mode Jacobian in the low dtype is compared with
the reverse-mode Jacobian in float64 at the same values (a correct formula's
rounding error, the registry's float64 formulas being right to 1e-10), and
that error is divided by the allowance ``gradcheck.lowprec.lowprecision`` gives it
with ``MARGIN = 1``. The largest ratio is what ``MARGIN`` must exceed.
"""
from __future__ import annotations

import warnings

import numpy as np

from adcheck.gradcheck.lowprec import lowprecision
from adcheck.gradcheck.core.analytical import ad_blocks
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.problem import Problem
from adcheck.gradcheck.core.sides import REVERSE
from adcheck.gradcheck.lowprec.widening import wide_blocks, widened
from adcheck.runner.checks import OpSubject
from adcheck.runner.registry import OPINFO, source_dtype


def _samples(info, name: str, engine: str, limit: int):
    dtype = OPINFO.dtype(name)
    if source_dtype(dtype) not in info.dtypes:
        return
    for k, sample in enumerate(OPINFO.samples(info, dtype)):
        if k >= limit:
            return
        call, _ = OpSubject(OPINFO, info, sample, dtype, engine).call()
        if call.inputs:
            yield k, call


def _ratios(call) -> list:
    """``(largest ratio, key, error / (u M))`` per block of one sample."""
    problem = Problem(call.func, call.inputs, warn_precision=False)
    wide, _ = widened(problem)
    if wide is None:
        return []
    expected = wide_blocks(Evaluator(problem), wide)
    low = ad_blocks(Evaluator(problem), REVERSE)
    high = ad_blocks(Evaluator(wide), REVERSE)
    u = lowprecision.formula_epsilon(problem) / 2
    found = []
    for key, block in low.blocks.items():
        if block.size == 0:
            continue
        err = np.abs(block - high.blocks[key])
        allowed = expected.allowance[key] / lowprecision.MARGIN
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(err > 0, err / allowed, 0.0)
        scale = float(np.max(np.abs(high.blocks[key]))) or 1.0
        found.append((float(np.nanmax(ratio)), key, float(err.max() / u / scale)))
    return found


def calibrate(args) -> None:
    worst = []
    for info in OPINFO.ops():
        if args.engine == "torch" and info.torch_name is None:
            continue
        for name in args.dtypes.split(","):
            try:
                samples = list(_samples(info, name, args.engine, args.samples))
            except Exception:  # noqa: BLE001 - the op has no such dtype on this engine
                continue
            for k, call in samples:
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        ratios = _ratios(call)
                except Exception:  # noqa: BLE001 - no kernel, or no backward, in this dtype
                    continue
                worst += [(r, info.name, name, k, key, e) for r, key, e in ratios]
    worst.sort(key=lambda w: -w[0])
    print(f"{len(worst)} blocks; error / allowance at MARGIN = 1 (MARGIN is "
          f"{lowprecision.MARGIN:g}):")
    print(f"{'ratio':>6} {'op':28} {'dtype':9} {'sample':>6} {'pair':8} {'err/(u max|J|)':>14}")
    for ratio, op, name, k, key, e in worst[:args.top]:
        print(f"{ratio:6.2f} {op:28} {name:9} {k:6d} {str(key):8} {e:14.1f}")
    over = sum(w[0] > lowprecision.MARGIN for w in worst)
    print(f"blocks whose error exceeds the allowance (false alarms): {over}")
