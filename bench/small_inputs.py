"""torch's formulas at small inputs, and what the second ladder costs a sweep.

    python bench/small_inputs.py            # the verdicts (about a minute)
    python bench/small_inputs.py --sweep    # and the built-in registry's sweep, in process

Each function (torch's own formula: correct at these inputs, but for sinc's
loss of digits, see bench/small_inputs.md) is checked with ``precise=True``
at four random inputs drawn from a standard normal and scaled to 1e-6, 1e-9,
1e-13 and 1e-40 (their absolute values where the domain is positive). It
prints the functions that do not pass at each scale.

``--sweep`` runs ``adcheck ops``' tasks (the built-in registry, its default
checks) in this process and counts the calls of
``gradcheck.numerics.smallsteps``' ladder, the columns it takes, and the CPU
seconds they cost, against the sweep's. bench/large_inputs.py does the same
for large inputs with these helpers.
"""
from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import torch

from adcheck import gradcheck

SCALES = (1e-6, 1e-9, 1e-13, 1e-40)


def _pair(fn):
    return lambda x: fn(x[:2], x[2:])


POSITIVE = {"log": torch.log, "log2": torch.log2, "log10": torch.log10, "sqrt": torch.sqrt,
            "rsqrt": torch.rsqrt, "lgamma": torch.lgamma, "digamma": torch.digamma,
            "xlogy": lambda x: torch.xlogy(x, x), "pow 0.5": lambda x: x ** 0.5,
            "pow -1.5": lambda x: x ** -1.5, "logit": torch.logit,
            "special.entr": torch.special.entr, "polygamma 1": lambda x: torch.polygamma(1, x)}
SIGNED = {"reciprocal": torch.reciprocal, "sin": torch.sin, "tan": torch.tan, "atan": torch.atan,
          "asin": torch.asin, "erf": torch.erf, "erfinv": torch.erfinv, "expm1": torch.expm1,
          "log1p": torch.log1p, "sigmoid": torch.sigmoid, "tanh": torch.tanh, "abs": torch.abs,
          "sinc": torch.sinc, "cube root": lambda x: torch.sign(x) * torch.abs(x) ** (1 / 3),
          "normalize": lambda x: torch.nn.functional.normalize(x, dim=0),
          "softmax of 1e9 x": lambda x: torch.softmax(x * 1e9, 0),
          "vector_norm": torch.linalg.vector_norm,
          "cdist": _pair(lambda a, b: torch.cdist(a[None, :, None], b[None, :, None])),
          "atan2": _pair(torch.atan2), "hypot": _pair(torch.hypot), "div": _pair(torch.div),
          "logsumexp of 1e9 x": lambda x: torch.logsumexp(x * 1e9, 0), "std": torch.std,
          "var": torch.var, "prod": torch.prod, "cumprod": lambda x: x.cumprod(0),
          "angle of complex": _pair(lambda a, b: torch.angle(torch.complex(a, b))),
          "abs of complex": _pair(lambda a, b: torch.abs(torch.complex(a, b))),
          "log of complex": _pair(lambda a, b: torch.log(torch.complex(a, b)).real)}


def estimates() -> list:
    """Record, as a second ladder takes entries, each one's error estimate
    over its value."""
    try:
        from adcheck.gradcheck.numerics import secondladder
    except ImportError:   # (the code before the ladders, run for a "before")
        return []
    ratios, take = [], secondladder._take

    def recorded(first, rows, second, credible, allowance, *contradicting):
        values, _, _ = first
        before = values[rows].copy()
        take(first, rows, second, credible, allowance, *contradicting)
        value, error = second
        after = values[rows]
        # (NaN != NaN: an entry left NaN is not taken; 0: no ratio)
        taken = (before != after) & np.isfinite(after) & (value != 0)
        ratios.extend((error[taken] / np.abs(value[taken])).tolist())
    secondladder._take = recorded
    return ratios


def verdicts(functions: dict, scales, draw) -> None:
    """Print, per scale, the functions (name: (function, whether its input
    must be positive)) that do not pass at ``draw(rng, scale, positive)``."""
    from adcheck.gradcheck.errors import UncheckableError
    rng = np.random.default_rng(1)
    ratios = estimates()
    for scale in scales:
        failing, refused = [], []
        for name, (fn, positive) in functions.items():
            x = torch.tensor(draw(rng, scale, positive), dtype=torch.float64, requires_grad=True)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    if not gradcheck.check(fn, (x,), precise=True, seed=0).passed:
                        failing.append(name)
                except UncheckableError:   # (nothing resolved there: no verdict to count)
                    refused.append(name)
        print(f"{scale:g}: {len(functions) - len(failing) - len(refused)} of {len(functions)} "
              f"pass; not passing: {', '.join(failing) or 'none'}"
              + (f"; refused (resolved nothing): {', '.join(refused)}" if refused else ""))
    if ratios:
        print(f"entries the second ladder took: {len(ratios)}; their estimate over their value: "
              f"median {np.median(ratios):.1e}, 90th percentile {np.quantile(ratios, 0.9):.1e}, "
              f"largest {max(ratios):.1e}")


def _scaled(rng, scale, positive):
    values = rng.standard_normal(4)
    return (np.abs(values) if positive else values) * scale


def sweep_cost(module) -> None:
    """The built-in sweep's CPU time, and the calls, columns and CPU time of
    ``module.ladder`` (a second ladder) in it."""
    from adcheck.runner.registry import OpinfoRegistry
    from adcheck.runner.selection import plan, select
    from adcheck.runner.tasks import build_settings, run_task
    counts = {"calls": 0, "columns": 0, "seconds": 0.0}
    ladder = module.ladder

    def counted(ev, in_idx, first, *args, **keywords):
        # (the evaluations happen between the yields: the clock spans them)
        start = time.process_time()
        found = yield from ladder(ev, in_idx, first, *args, **keywords)
        counts["seconds"] += time.process_time() - start
        counts["calls"] += 1
        counts["columns"] += len(first)
        return found
    module.ladder = counted
    tasks = plan(select(OpinfoRegistry(), (), (), "refengine").infos, None,
                 build_settings(explore="quick"), together=True)
    start = time.process_time()
    for task in tasks:
        run_task(task)
    total = time.process_time() - start
    print(f"sweep: {len(tasks)} tasks, {total:.1f} s of CPU; the second ladder: "
          f"{counts['calls']} calls, {counts['columns']} columns, {counts['seconds']:.3f} s "
          f"({100 * counts['seconds'] / total:.2f} %)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweep", action="store_true",
                        help="also measure the ladder's share of the built-in sweep")
    args = parser.parse_args()
    functions = {**{name: (fn, True) for name, fn in POSITIVE.items()},
                 **{name: (fn, False) for name, fn in SIGNED.items()}}
    verdicts(functions, SCALES, _scaled)
    if args.sweep:
        from adcheck.gradcheck.numerics import smallsteps
        sweep_cost(smallsteps)


if __name__ == "__main__":
    main()
