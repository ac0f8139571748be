"""What a quick explore pass by default would cost (issue 30, item 6).

For the first sample of each op of adcheck's registry (float64, reverse
mode, refengine or torch), the time of ``check()`` as the registry runs it,
and of the same call with ``explore="quick"`` (exact zeros, ties and two
magnitudes only, no budget cut: ``explore_budget=120``), the least of
``ROUNDS`` runs of each (after one warming run), the quick pass's own seconds
(``Report.counts["explore"]``), and whether the quick pass failed (a finding
on a registry formula: a bug or a false alarm, printed with its point).

    python bench/explore_quick.py [--engine refengine] [--ops 'a*,sin'] [--limit N]
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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", default="refengine")
    parser.add_argument("--ops", default="")
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args(argv)
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
        _timed(call.func, call.inputs, seed=seed, **keywords)   # warm: caches, first calls
        plain, report, error = _timed(call.func, call.inputs, seed=seed, **keywords)
        if error or not report.passed:
            continue    # the plain check must pass for the quick pass to be measured
        # the machine is shared: the least of ROUNDS runs of each, alternated
        quick, report, error = _timed(call.func, call.inputs, seed=seed, explore="quick",
                                      explore_budget=120.0, **keywords)
        spent = report.counts.get("explore", {}).get("seconds", 0.0) if report else 0.0
        for _ in range(ROUNDS - 1):
            plain = min(plain, _timed(call.func, call.inputs, seed=seed, **keywords)[0])
            again = _timed(call.func, call.inputs, seed=seed, explore="quick",
                           explore_budget=120.0, **keywords)
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
