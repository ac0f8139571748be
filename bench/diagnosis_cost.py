"""What this session's diagnoses cost, against the checks they ride in.

    python bench/diagnosis_cost.py

- kept intermediates (``gradcheck.verdict.constsaves``): three calls of the
  function and a walk of its graph, only when a second-order check failed;
  timed alone and against the failing check it explains (torch and
  refengine hand-written layer norms that keep ``mean``/``rstd``);
- aliased inputs (``Problem._separate_aliases``): an identity test per input on
  every problem built, timed on five distinct inputs (nothing to copy) against
  a passing first-order check of ``sin``.

Medians of ``--repeat`` runs (default 7), this process's CPU time.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import adcheck.refengine as R  # noqa: E402
from adcheck.gradcheck import check  # noqa: E402
from adcheck.gradcheck.core.problem import Problem  # noqa: E402
from adcheck.gradcheck.engines import engine_for  # noqa: E402
from adcheck.gradcheck.verdict.constsaves import constant_saves  # noqa: E402


def kept_norm(E):
    """A row normalization on engine ``E`` (torch or refengine) that keeps
    ``mean`` and ``rstd`` from its forward: wrong at second order."""
    class KeptNorm(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            mean = x.mean(-1, keepdim=True)
            rstd = 1.0 / E.sqrt(((x - mean) ** 2).mean(-1, keepdim=True) + 1e-5)
            ctx.save_for_backward(x, mean, rstd)
            return (x - mean) * rstd

        @staticmethod
        def backward(ctx, g):
            x, mean, rstd = ctx.saved_tensors
            out = (x - mean) * rstd
            return rstd * (g - g.mean(-1, keepdim=True) - out * (g * out).mean(-1, keepdim=True))
    return KeptNorm


def _median(call, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        call()
        times.append(time.process_time() - start)
    return statistics.median(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="runs per timing (median kept)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    values = np.random.default_rng(0).standard_normal((4, 6))
    cases = [("torch", kept_norm(torch).apply, lambda: torch.tensor(values, requires_grad=True)),
             ("refengine", kept_norm(R).apply,
              lambda: R.tensor(values, dtype=R.float64, requires_grad=True))]
    print("kept intermediates: a failing second-order check, and its diagnosis alone")
    for name, func, make in cases:
        x = make()
        whole = _median(lambda: check(func, (x,), order=2, precise=True, seed=0), args.repeat)
        alone = _median(lambda: constant_saves(engine_for((x,)), func, (x,)), args.repeat)
        print(f"  {name:10} check {1e3 * whole:7.1f} ms, diagnosis {1e3 * alone:5.2f} ms "
              f"({100 * alone / whole:.1f} %)")
    inputs = tuple(torch.tensor(values, requires_grad=True) for _ in range(5))
    problem = Problem(lambda *a: sum(t.sin() for t in a), inputs, measure=False)
    per = _median(lambda: [problem._separate_aliases(inputs) for _ in range(1000)],
                  args.repeat) / 1000
    x = torch.tensor(values, requires_grad=True)
    sin = _median(lambda: check(torch.sin, (x,), seed=0, explore=False), args.repeat)
    print(f"aliased inputs: {1e6 * per:.1f} us per problem of five inputs; a check of sin "
          f"{1e3 * sin:.2f} ms ({100 * per / sin:.2f} %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
