"""What checking second order by default costs `adcheck check` (issue 28, item 7).

For each object, `adcheck check OBJ` is run with `--check reverse,forward` (the
old default) and with no `--check` (now reverse,forward,gradgrad), REPEATS
times each, interleaved; the table gives the medians of the wall time of the
command and of the checks' own seconds (the JSON's per-check `seconds`, summed),
and writes bench/second_order_default.md. A second table times the Python
API in one process: `check()` with its defaults (torch's fixed tolerances,
first order) against `precise=True` and against `assert_gradients`' defaults
(precise, then `order=2`).

    python bench/second_order_default.py [--repeats 3]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIX = "tests/cli/fixtures/second_order.py"
TARGETS = [
    ("examples/myops.py:MyTanh", "refengine Function, right"),
    ("examples/myops.py:MySin", "refengine Function, wrong backward"),
    (f"{FIX}:SiLU", "torch Function, right"),
    (f"{FIX}:DetachedSiLU", "torch Function, wrong second derivative"),
    (f"{FIX}:NumpySin", "torch Function, NumPy backward (no double backward)"),
    ("examples/mylayer.py:make_layer", "torch nn.Module (4 to 3) with a custom Function"),
]


def run(target: str, checks: list) -> tuple:
    """(wall seconds, summed check seconds, {check: status counts}) of one run."""
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", "from adcheck.cli.main import main; main()",
                          "check", target, "--format", "json", *checks],
                         cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.perf_counter() - start
    doc = json.loads(out.stdout)
    statuses: dict = {}
    for r in doc["results"]:
        statuses.setdefault(r["check"], []).append(r["status"])
    return wall, sum(r["seconds"] or 0.0 for r in doc["results"]), statuses, doc["exit_code"]


def in_process(repeats: int) -> list:
    """Median seconds of ``check`` with torch's tolerances, precise, and precise
    plus ``order=2`` (what ``assert_gradients`` runs by default)."""
    sys.path[:0] = [str(ROOT), str(ROOT / "examples"), str(ROOT / Path(FIX).parent)]
    import numpy as np
    import torch
    import adcheck.refengine as E
    from adcheck.gradcheck import check
    from myops import MyTanh
    from second_order import SiLU
    data = np.random.default_rng(0).standard_normal((3, 4))
    cases = [("MyTanh (refengine)", MyTanh.apply,
              lambda: E.tensor(data, dtype=E.float64, requires_grad=True)),
             ("SiLU (torch)", SiLU.apply, lambda: torch.tensor(data, requires_grad=True))]
    rows = []
    for name, func, make in cases:
        times = {}
        for label, kw in (("fixed", {}), ("precise", {"precise": True}),
                          ("second", {"precise": True, "order": 2})):
            check(func, (make(),), **kw)   # warm: imports, first compilations
            runs = []
            for _ in range(repeats):
                start = time.perf_counter()
                check(func, (make(),), seed=0, **kw)
                runs.append(time.perf_counter() - start)
            times[label] = statistics.median(runs)
        rows.append((name, times["fixed"], times["precise"],
                     times["precise"] + times["second"]))
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rows = []
    for target, what in TARGETS:
        old, new = [], []
        for _ in range(args.repeats):
            old.append(run(target, ["--check", "reverse,forward"]))
            new.append(run(target, []))
        med = lambda runs, k: statistics.median(r[k] for r in runs)  # noqa: E731
        gg = new[-1][2].get("gradgrad", [])
        rows.append((target, what, med(old, 0), med(new, 0), med(old, 1), med(new, 1),
                     ", ".join(sorted(set(gg))), old[-1][3], new[-1][3]))
        print(rows[-1], flush=True)
    api = in_process(10 * args.repeats)
    load = os.getloadavg()[0]
    lines = ["# Second order by default in `adcheck check`: its cost", "",
             f"`python bench/second_order_default.py --repeats {args.repeats}`, "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average {load:.1f} "
             "(2 cores). Medians; \"checks\" is the sum of the checks' own seconds "
             "(the JSON's `seconds`), \"wall\" the whole command.", "",
             "| object | what | wall, reverse+forward | wall, default | checks, "
             "reverse+forward | checks, default | gradgrad | exit before | exit now |",
             "|---|---|---|---|---|---|---|---|---|"]
    for t, w, wo, wn, co, cn, gg, eo, en in rows:
        lines.append(f"| `{t}` | {w} | {wo:.2f} s | {wn:.2f} s | {co:.2f} s | {cn:.2f} s "
                     f"| {gg} | {eo} | {en} |")
    lines += ["", "In one process, on a 3x4 input (medians of "
              f"{10 * args.repeats} calls after a warm one):", "",
              "| function | `check()` defaults (fixed tolerances) | `precise=True` | "
              "`assert_gradients` defaults (precise, then order 2) |", "|---|---|---|---|"]
    for name, fixed, precise, both in api:
        lines.append(f"| {name} | {1e3 * fixed:.1f} ms | {1e3 * precise:.1f} ms "
                     f"({precise / fixed:.1f}x) | {1e3 * both:.1f} ms ({both / fixed:.1f}x) |")
    (ROOT / "bench" / "second_order_default.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
