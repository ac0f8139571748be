"""torch's formulas at large inputs, and what the second ladder costs a sweep.

    python bench/large_inputs.py            # the verdicts (a minute or two)
    python bench/large_inputs.py --sweep    # and the built-in registry's sweep, in process

Each function (torch's own formula) is checked with ``precise=True`` at four
inputs ``scale * (1 + u)``, ``u`` uniform in [0, 1), at scales from 1e4 to
1e15: angles of a positional encoding or a timestamp, logits offset by a
large constant, and functions that vary on the input's own scale, whose
first ladder was right already. It prints the functions that do not pass at
each scale (see bench/large_inputs.md).

``--sweep`` counts the calls of ``gradcheck.numerics.largesteps``' ladder in
``adcheck ops``' tasks (the built-in registry, its default checks), the
columns it takes and the CPU seconds they cost, against the sweep's.
"""
from __future__ import annotations

import argparse
import math

import torch

from small_inputs import sweep_cost, verdicts

SCALES = (1e4, 1e6, 1e9, 1e12, 1e15)
F = torch.nn.functional


# (the constants below are piecewise constant functions of the input, not
# detached values of it: the differences see what the function computes)

def _near(fn):
    """``fn`` of the input less its nearest integer: ``fn``'s structure at
    every scale."""
    return lambda x: fn(x - x.round())


def _offset(fn):
    """``fn`` of logits near the first entry's nearest integer, a large
    constant, a unit apart."""
    return lambda x: fn(x - x.round() + x[0].round() + torch.arange(4.0, dtype=x.dtype))


def _per_scale(x):
    """The largest entry's power of two below it."""
    return 2 ** torch.floor(torch.log2(x.max()))


FUNCTIONS = {
    "sin": torch.sin, "cos": torch.cos, "tan": torch.tan, "sinc": torch.sinc,
    "sin(2 pi x / 86400)": lambda x: torch.sin(2 * math.pi * x / 86400),
    "x + sin(x)": lambda x: x + torch.sin(x), "frac": torch.frac,
    "remainder by 2 pi": lambda x: torch.remainder(x, 2 * math.pi),
    "atan2(sin, cos)": lambda x: torch.atan2(torch.sin(x), torch.cos(x)),
    "tanh near": _near(torch.tanh), "sigmoid near": _near(torch.sigmoid),
    "gelu near": _near(F.gelu), "erf near": _near(torch.erf),
    "softmax of offset": _offset(lambda x: torch.softmax(x, 0)),
    "logsumexp of offset": _offset(lambda x: torch.logsumexp(x, 0)),
    "log": torch.log, "sqrt": torch.sqrt, "square": torch.square, "reciprocal": torch.reciprocal,
    "atan": torch.atan, "tanh of x / scale": lambda x: torch.tanh(x / _per_scale(x)),
    "layer_norm": lambda x: F.layer_norm(x, (4,)), "softmax": lambda x: torch.softmax(x, 0),
    "inverse of 2x2": lambda x: torch.linalg.inv(x.reshape(2, 2)),
    "svdvals of 2x2": lambda x: torch.linalg.svdvals(x.reshape(2, 2)),
    "cumprod": lambda x: x.cumprod(0),
}


def _drawn(rng, scale, positive):
    return scale * (1 + rng.uniform(size=4))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweep", action="store_true",
                        help="also measure the ladder's share of the built-in sweep")
    args = parser.parse_args()
    verdicts({name: (fn, True) for name, fn in FUNCTIONS.items()}, SCALES, _drawn)
    if args.sweep:
        from adcheck.gradcheck.numerics import largesteps
        sweep_cost(largesteps)


if __name__ == "__main__":
    main()
