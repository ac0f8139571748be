"""What leaving out coordinates off the domain costs (``verdict.offdomain``).

    python bench/offdomain_cost.py            # 7 rounds, CPU time, medians
    python bench/offdomain_cost.py --rounds 11

Every dense precise check now scans its expected Jacobian for NaN
(``flow._holds_nan``); only one that holds some probes the NaN columns (six
evaluations each, both ways), differences again those whose small moves stay
in the domain, and masks those whose moves never do. Times, with the scan
and with it replaced by ``False`` in the same process, alternated round by
round:

- small passing checks of refengine ops (no NaN: the scan alone);
- the log-likelihood of a Gaussian in its Cholesky factor (``examples/gaussian.py``),
  whose upper triangle raises at every step (left out);
- a Dirichlet's log-density in its value on the simplex, whose first steps
  leave the support (differenced within 2**-20 of them).

With the step these pass; without it they fail ("finite differences give
NaN", which a sweep reports as "cannot judge").

bench/offdomain_cost.md quotes runs.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from adcheck import refengine as E
from adcheck.gradcheck import check
import adcheck.gradcheck.flow as flow


def _small_ops() -> list:
    rng = np.random.default_rng(0)
    x = E.tensor(rng.uniform(0.5, 1.5, (3, 4)), requires_grad=True)
    y = E.tensor(rng.uniform(0.5, 1.5, (3, 4)), requires_grad=True)
    return [(E.sin, (x,)), (E.exp, (x,)), (E.log, (x,)), (E.mul, (x, y)), (E.div, (x, y)),
            (lambda a: E.sum(a * a, 1), (x,))]


def _gaussian():
    import torch
    g = torch.Generator().manual_seed(0)
    L = torch.eye(3, dtype=torch.float64) + 0.1 * torch.randn(3, 3, generator=g,
                                                             dtype=torch.float64).tril(-1)
    x = torch.randn(2, 3, generator=g, dtype=torch.float64)

    def loglik(L):
        zero = torch.zeros(3, dtype=L.dtype)
        return torch.distributions.MultivariateNormal(zero, scale_tril=L,
                                                      validate_args=True).log_prob(x).sum()
    return loglik, (L.requires_grad_(),)


def _dirichlet():
    import torch
    a = torch.tensor([1.5, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    p = torch.tensor([0.2, 0.3, 0.5], dtype=torch.float64, requires_grad=True)
    return (lambda a, p: torch.distributions.Dirichlet(a, validate_args=True).log_prob(p)), (a, p)


def _once(cases: list) -> tuple:
    start = time.process_time()
    verdicts = set()
    for func, inputs in cases:
        report = check(func, inputs, precise=True, check_inputs_alone=False, explore=False,
                       seed=0)
        verdicts.add("passed" if report.passed else "failed")
    return time.process_time() - start, "/".join(sorted(verdicts))


def _scan_alone(cases: list, scan) -> None:
    """The scan's own time over ``cases`` (checks that pass: the scan finds no
    NaN), timed inside it: the ratios below move by more from round to round."""
    spent = []

    def timed(numerical):
        start = time.perf_counter()
        try:
            return scan(numerical)
        finally:
            spent.append(time.perf_counter() - start)
    flow._holds_nan = timed
    try:
        start = time.perf_counter()
        _once(cases)
        total = time.perf_counter() - start
    finally:
        flow._holds_nan = scan
    print(f"the scan alone: {len(spent)} calls, {1e6 * sum(spent):.0f} us of {1e3 * total:.1f} ms "
          f"({100 * sum(spent) / total:.2f} %) over the small checks")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="alternated rounds (default 7)")
    args = parser.parse_args(argv)
    scan = flow._holds_nan
    rows = [("refengine sin, exp, log, mul, div, sum of squares (3x4)", _small_ops())]
    try:
        rows.append(("Gaussian log-likelihood in its Cholesky factor (torch)", [_gaussian()]))
        rows.append(("Dirichlet log-density in its value (torch)", [_dirichlet()]))
    except ImportError:
        print("(torch is not installed: the Gaussian's row is left out)")
    _scan_alone(rows[0][1], scan)
    print(f"{'case':58} {'with':>16} {'without':>16} {'ratio':>6}")
    for name, cases in rows:
        _once(cases)   # (warm: imports, caches)
        found = {"with": [], "without": []}
        verdict = {}
        for _ in range(args.rounds):
            for label in ("with", "without"):
                flow._holds_nan = scan if label == "with" else (lambda numerical: False)
                try:
                    seconds, verdict[label] = _once(cases)
                finally:
                    flow._holds_nan = scan
                found[label].append(seconds)
        w, wo = (statistics.median(found[k]) for k in ("with", "without"))
        print(f"{name:58} {1e3 * w:8.1f} ms {verdict['with']:>6} "
              f"{1e3 * wo:8.1f} ms {verdict['without']:>6} {w / wo:6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
