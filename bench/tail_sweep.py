"""Precise checks of smooth torch functions with every input in a far tail.

Inputs nobody hands a checker: all of a sample in the tail where a function's
value or derivative is computed with a cancellation (``1 - sigmoid(x)``,
``(1 + erf(x)) / 2``), so that its rounding comes in stairs. Each function is
checked at first and second order, at two seeds, with 16 inputs uniform in
each range, and the verdict (pass, FAIL, cannot judge) printed; ``--json``
keeps them, so two checkouts can be compared:

    python bench/tail_sweep.py --json /tmp/new.json
    PYTHONPATH=/path/to/other/checkout python bench/tail_sweep.py --json /tmp/old.json

bench/tail_sweep.md holds the runs and what each remaining failure is.
"""
from __future__ import annotations

import argparse
import json
import warnings

import numpy as np
import torch

from adcheck import gradcheck
from adcheck.gradcheck.errors import UncheckableError

F = torch.nn.functional

#: (name, function, ranges of x)
CASES = [
    ("sigmoid", torch.sigmoid, [(20, 26), (-26, -20), (10, 16)]),
    ("tanh", torch.tanh, [(8, 12), (-12, -8), (4, 7)]),
    ("softplus", F.softplus, [(20, 30), (-30, -20)]),
    ("logsigmoid", F.logsigmoid, [(-30, -20), (20, 30)]),
    ("erf", torch.erf, [(3, 5), (-5, -3)]),
    ("erfc", torch.erfc, [(3, 5)]),
    ("silu", F.silu, [(20, 30), (-30, -20)]),
    ("gelu", F.gelu, [(-8, -6), (6, 8)]),
    ("expm1", torch.expm1, [(-40, -20)]),
    ("log1p(exp)", lambda t: torch.log1p(torch.exp(t)), [(-40, -20)]),
]


def verdict(func, low: float, high: float, order: int, seed: int) -> str:
    """pass, FAIL or cannot (judge) for 16 inputs uniform in [low, high)."""
    x = np.random.default_rng(seed).uniform(low, high, 16)
    try:
        report = gradcheck.check(func, (torch.tensor(x, requires_grad=True),), precise=True,
                                 seed=seed, order=order, explore=False)
    except UncheckableError:
        return "cannot"
    return "pass" if report.passed else "FAIL"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the verdicts, by case, to this file")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore", UserWarning)   # (torch's resize notice in batched grads)
    found = {}
    for name, func, ranges in CASES:
        for low, high in ranges:
            for order in (1, 2):
                for seed in (0, 1):
                    key = f"{name} [{low}, {high}] order {order} seed {seed}"
                    found[key] = verdict(func, low, high, order, seed)
                    if found[key] != "pass":
                        print(f"{found[key]:7s} {key}")
    counts = {v: sum(1 for f in found.values() if f == v) for v in ("pass", "FAIL", "cannot")}
    print(f"{counts['pass']} pass, {counts['FAIL']} FAIL, {counts['cannot']} cannot judge")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(found, out, indent=0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
