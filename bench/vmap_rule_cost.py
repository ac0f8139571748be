"""What checking a Function's own vmap rule costs (``gradcheck.verdict.vmaprule``).

    python bench/vmap_rule_cost.py [--repeat 7]

For torch Functions with a right vmap rule of their own (``examples/vmap_rules.py``'s
``RightGate``, a column sum, a log of a batched matrix-vector product) at
growing sizes: ``gradcheck.check(F.apply, inputs, precise=True)`` with the
rule checked and with ``check_vmap_rule=False`` (the time of the rule's check
is their difference), and torch's ``gradcheck`` on the same inputs, in one
run. The rule's check is three calls per example set plus one vmapped call
per layout; a function without a rule of its own pays one attribute lookup.
Medians of ``--repeat`` runs (wall time, interleaved), torch on one thread.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from adcheck.gradcheck import check  # noqa: E402
from vmap_rules import RightGate  # noqa: E402


class ColSum(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return x.sum(0)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.n = inputs[0].shape[0]

    @staticmethod
    def backward(ctx, g):
        return g.unsqueeze(0).expand(ctx.n, *g.shape)

    @staticmethod
    def vmap(info, in_dims, x):
        return (x.sum(0), None) if in_dims[0] is None else (x.movedim(in_dims[0], 0).sum(1), 0)


def cases(n):
    rng = np.random.default_rng(0)

    def t(*shape):
        return torch.tensor(rng.uniform(0.5, 1.5, shape), requires_grad=True)
    return [("RightGate", RightGate.apply, (t(n, 8), t(8))),
            ("ColSum", ColSum.apply, (t(n, 8),))]


def timed(call, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, numpy {np.__version__}, medians of {args.repeat}")
    print(f"{'function':10} {'rows':>5} {'rule on ms':>11} {'rule off ms':>12} {'rule ms':>8} "
          f"{'share':>6} {'torch ms':>9}")
    for n in (4, 16, 64):
        for name, func, inputs in cases(n):
            def on():
                return check(func, inputs, precise=True, seed=0)

            def off():
                return check(func, inputs, precise=True, seed=0, check_vmap_rule=False)

            def theirs():
                return torch.autograd.gradcheck(func, inputs)
            assert on().passed and off().passed and theirs()
            a, b, c = (timed(f, args.repeat) for f in (on, off, theirs))
            print(f"{name:10} {n:5d} {a * 1e3:11.2f} {b * 1e3:12.2f} {(a - b) * 1e3:8.2f} "
                  f"{(a - b) / a:6.1%} {c * 1e3:9.2f}")


if __name__ == "__main__":
    main()
