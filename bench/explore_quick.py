"""What the quick explore pass, on by default, costs (issue 30, item 6).

For the first sample of each op of adcheck's registry (float64, reverse
mode, refengine or torch), the time of ``check()`` as the registry runs it
with ``explore=False``, and of the same call with ``explore="quick"`` (exact
zeros, ties and two magnitudes only, within its own cap of
``search.QUICK_BUDGET`` seconds), the least of ``ROUNDS`` runs of each (after
one warming run), the quick pass's own seconds (``Report.counts["explore"]``),
and whether the quick pass failed (a finding on a registry formula: a bug or
a false alarm, printed with its point).

``--small``: what a user's ``check(f, inputs)`` pays per call for small torch
functions, ``check()``'s defaults (the quick pass on) against ``explore=False``
and against ``torch.autograd.gradcheck`` at the same inputs, interleaved in the
same run (the median of ``SMALL_ROUNDS`` calls of each, torch on one thread).

    python bench/explore_quick.py [--engine refengine] [--ops 'a*,sin'] [--limit N]
    python bench/explore_quick.py --small
"""
from __future__ import annotations

import argparse
import fnmatch
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: runs of each measurement; the least is kept (other processes share the machine)
ROUNDS = 3
if str(ROOT.parent) not in sys.path:
    sys.path.insert(0, str(ROOT.parent))


def _subjects(engine: str, patterns: list, limit: int | None):
    from adcheck.runner.checks import OpSubject
    from adcheck.runner.registry import OPINFO
    from adcheck.runner.selection import plan  # noqa: F401  (registers the ops)
    dtype = OPINFO.dtype("float64")
    count = 0
    for info in OPINFO.ops():
        if patterns and not any(fnmatch.fnmatch(info.name, p) for p in patterns):
            continue
        if engine == "torch" and not getattr(info, "torch_name", None):
            continue
        try:
            sample = next(iter(OPINFO.samples(info, dtype, 0)))
        except (StopIteration, Exception):   # no float64 sample
            continue
        yield OpSubject(OPINFO, info, sample, dtype, engine)
        count += 1
        if limit and count >= limit:
            return


def _timed(func, inputs, **keywords):
    from adcheck.gradcheck import check
    start = time.perf_counter()
    try:
        report = check(func, inputs, **keywords)
    except Exception as exc:   # the op's own error: not what is measured here
        return time.perf_counter() - start, None, f"{type(exc).__name__}: {exc}"
    return time.perf_counter() - start, report, None


#: calls of each kind per small function (``--small``); the median is kept
SMALL_ROUNDS = 31


def _small_functions():
    """``(name, function, inputs)``: small torch functions as a user checks them."""
    import torch
    g = torch.Generator().manual_seed(0)

    def randn(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float64, requires_grad=True)
    return [("sin", torch.sin, (randn(4),)),
            ("exp", torch.exp, (randn(3, 4),)),
            ("mul", torch.mul, (randn(3), randn(3))),
            ("tanh", torch.tanh, (randn(3, 4),)),
            ("softmax", lambda x: torch.softmax(x, -1), (randn(3, 4),)),
            ("matmul", torch.matmul, (randn(3, 4), randn(4, 2))),
            ("logsumexp", lambda x: torch.logsumexp(x, -1), (randn(3, 4),)),
            ("relu", torch.relu, (randn(5),))]


def _median_ms(samples: list) -> float:
    return 1000 * sorted(samples)[len(samples) // 2]


def small() -> int:
    """``--small`` (see the module docstring)."""
    import torch

    from adcheck.gradcheck import check
    # one compute thread, as adcheck's workers run (on a loaded machine torch's
    # spinning thread pool made a 3x4 softmax take 50 ms)
    torch.set_num_threads(1)
    kinds = {"torch.autograd.gradcheck": lambda f, x: torch.autograd.gradcheck(f, x),
             "check(explore=False)": lambda f, x: check(f, x, seed=0, explore=False),
             "check()": lambda f, x: check(f, x, seed=0)}
    rows = []
    for name, func, inputs in _small_functions():
        times = {k: [] for k in kinds}
        for run in kinds.values():
            run(func, inputs)             # warm
        for _ in range(SMALL_ROUNDS):     # interleaved: the load falls on each alike
            for kind, run in kinds.items():
                start = time.perf_counter()
                run(func, inputs)
                times[kind].append(time.perf_counter() - start)
        torch_ms, off_ms, on_ms = (_median_ms(times[k]) for k in kinds)
        tried = check(func, inputs, seed=0).counts["explore"]["tried"]
        rows.append((name, torch_ms, off_ms, on_ms, tried))
        print(f"{name:10} torch {torch_ms:7.2f} ms  check(explore=False) {off_ms:7.2f} ms  "
              f"check() {on_ms:7.2f} ms ({tried} points): +{on_ms - off_ms:6.2f} ms, "
              f"x{on_ms / off_ms:4.2f} of explore=False, x{on_ms / torch_ms:5.2f} of torch "
              f"(explore=False: x{off_ms / torch_ms:5.2f})", flush=True)
    added = sorted(r[3] - r[2] for r in rows)
    print(f"{len(rows)} functions: the quick pass adds {added[0]:.2f} to {added[-1]:.2f} ms "
          f"per check() call (median {added[len(added) // 2]:.2f} ms)")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", default="refengine")
    parser.add_argument("--ops", default="")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--small", action="store_true")
    args = parser.parse_args(argv)
    if args.small:
        return small()
    from adcheck.runner.checks import Policy
    warnings.simplefilter("ignore")
    totals, failing, n = [0.0, 0.0, 0.0], [], 0
    patterns = [p for p in args.ops.split(",") if p]
    for subject in _subjects(args.engine, patterns, args.limit):
        try:
            call, problem = subject.call()
        except Exception:
            continue
        if problem is not None or not call.inputs:
            continue
        keywords = subject.keywords("reverse", Policy(engine=args.engine), call)
        seed = subject.seed(0, "reverse")
        keywords["explore"] = False
        _timed(call.func, call.inputs, seed=seed, **keywords)   # warm: caches, first calls
        plain, report, error = _timed(call.func, call.inputs, seed=seed, **keywords)
        if error or not report.passed:
            continue    # the plain check must pass for the quick pass to be measured
        # the machine is shared: the least of ROUNDS runs of each, alternated
        quick, report, error = _timed(call.func, call.inputs, seed=seed,
                                      **{**keywords, "explore": "quick"})
        spent = report.counts.get("explore", {}).get("seconds", 0.0) if report else 0.0
        for _ in range(ROUNDS - 1):
            plain = min(plain, _timed(call.func, call.inputs, seed=seed, **keywords)[0])
            again = _timed(call.func, call.inputs, seed=seed, **{**keywords, "explore": "quick"})
            quick = min(quick, again[0])
            if again[1] is not None:
                spent = min(spent, again[1].counts.get("explore", {}).get("seconds", spent))
        n += 1
        totals[0] += plain
        totals[1] += quick
        tally = report.counts.get("explore", {}) if report else {}
        totals[2] += spent
        line = (f"{subject.name:28} plain {plain:6.3f} s  with quick {quick:6.3f} s  "
                f"(quick pass {spent:6.3f} s, {tally.get('tried', 0):3} points)")
        if report is not None and not report.passed:
            failing.append(subject.name)
            line += "  FAILS: " + report.failures[0].detail.splitlines()[-1][:300]
        print(line, flush=True)
    print(f"{n} ops: plain {totals[0]:.2f} s, with the quick pass {totals[1]:.2f} s "
          f"(x{totals[1] / max(totals[0], 1e-9):.2f}); the quick pass itself {totals[2]:.2f} s "
          f"(plain + quick pass: x{(totals[0] + totals[2]) / max(totals[0], 1e-9):.2f}); "
          f"quick pass fails on {len(failing)}: {', '.join(failing)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
