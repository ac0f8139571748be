"""How often a single wrong entry escapes a probed check, against the odds it states.

    python bench/probe_escape.py                 # about 3 minutes
    python bench/probe_escape.py --trials 400 --n 300

A probed check (``jacobian="probed"``, ``probes=k``) compares ``J U`` for
``k`` Gaussian directions and states, in ``Report.escape``, the probability
that one entry wrong by ``r`` times its row's norm escapes it
(``gradcheck.large.probed``). Here ``cumsum`` of ``n`` inputs (a dense lower
triangular Jacobian, so that every row but the first holds many entries)
is written as a refengine Function whose vjp and jvp are both wrong in one
entry ``(i, j)``, ``j <= i``, drawn at random in the lower half of the rows,
by ``delta`` with ``delta * D[j] = r * ||(J D)[i]||`` (``D`` the step scaling
of the directions: ``h_0`` when extrapolating, 1 otherwise). Each trial is a
fresh seed and a fresh entry; an escape is a trial whose forward (or
reverse) comparison passes. The stated odds are those the check computes
for that ``r`` from its own Jacobians (``probed.escape_odds``). The
measured rate should not exceed the stated bound by more than its
sampling error (the 95 % interval is printed).
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from adcheck import gradcheck  # noqa: E402
import adcheck.refengine as E  # noqa: E402
from adcheck.gradcheck.numerics.scheme import scheme  # noqa: E402
from adcheck.gradcheck.large.probed import ProbePlan, escape_odds, projected  # noqa: E402
from adcheck.gradcheck.numerics.richardson import step_scale  # noqa: E402


def planted_cumsum(n: int, i: int, j: int, delta: float):
    """cumsum whose Jacobian entry ``(i, j)`` is off by ``delta`` in both modes."""
    into_j = np.zeros(n)
    into_j[j] = delta
    into_i = np.zeros(n)
    into_i[i] = delta

    class Planted(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return E.cumsum(x, 0)

        @staticmethod
        def backward(ctx, g):
            return E.flip(E.cumsum(E.flip(g, [0]), 0), [0]) + E.from_numpy(into_j) * g[i]

        @staticmethod
        def jvp(ctx, t):
            return E.cumsum(t, 0) + E.from_numpy(into_i) * t[j]
    return Planted.apply


def stated(report, options: dict, r: float) -> dict:
    """The odds the check states for an entry wrong by ``r`` (its own Jacobians)."""
    numerical = report.jacobians["numerical"]
    how = scheme(gradcheck.Options.from_keywords(**options))
    epsilon = float(np.finfo(np.float64).eps)
    tols = how.tolerances(numerical, epsilon)
    tols = tols if tols is not None else \
        {k: how.entry_tolerance(b, None, epsilon) for k, b in numerical.blocks.items()}
    plan = ProbePlan(numerical.seeds, report.jacobians["reverse"].row_seeds)
    _, reverse_tols = projected(numerical, plan, how, epsilon)
    return escape_odds(numerical, tols, reverse_tols, plan, how, epsilon, r)


def trial(n: int, r: float, k: int, precise: bool, seed: int) -> tuple:
    """One planted entry, one probed check: ``(forward escaped, reverse escaped, odds)``."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n)
    i = int(rng.integers(n // 2, n))
    j = int(rng.integers(0, i + 1))
    d = step_scale(x) if precise else np.ones(n)
    delta = r * math.sqrt(float(np.sum(d[:i + 1] ** 2))) / d[j]
    options = {"precise": precise, "check_forward_ad": True, "jacobian": "probed",
               "probes": k, "seed": seed, "check_scaling": False, "check_adjoint": False}
    report = gradcheck.check(planted_cumsum(n, i, j, delta),
                             (E.from_numpy(x).requires_grad_(),), **options)
    passed = {res.check: res.passed for res in report.results
              if res.check in ("forward", "reverse")}
    return passed["forward"], passed["reverse"], stated(report, options, r)


def _interval(hits: int, trials: int) -> str:
    p = hits / trials
    half = 1.96 * math.sqrt(max(p * (1 - p), 1 / trials) / trials)
    return f"{p:.3f} [{max(0.0, p - half):.3f}, {min(1.0, p + half):.3f}]"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=400)
    parser.add_argument("--trials", type=int, default=150)
    args = parser.parse_args(argv)
    cases = [(False, 1, 2.0e-3), (False, 1, 1.0e-2), (False, 2, 2.0e-3), (False, 2, 5.0e-3),
             (True, 1, 2.0e-8), (True, 2, 2.0e-8)]
    print(f"cumsum of {args.n} inputs, {args.trials} trials per row; escape rate measured "
          "[95 % interval] against the odds stated")
    print("| mode | probes | r | forward stated | forward measured | reverse stated | "
          "reverse measured |\n|---|---|---|---|---|---|---|")
    for precise, k, r in cases:
        forward = reverse = 0
        odds_f, odds_r = [], []
        for t in range(args.trials):
            f, rv, odds = trial(args.n, r, k, precise, seed=1000 * k + t)
            forward += f
            reverse += rv
            odds_f.append(odds["forward"])
            odds_r.append(odds["reverse"])
        print(f"| {'precise' if precise else 'atol/rtol'} | {k} | {r:.0e} | "
              f"{np.mean(odds_f):.3f} | {_interval(forward, args.trials)} | "
              f"{np.mean(odds_r):.3f} | {_interval(reverse, args.trials)} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
