"""Write runner/costs.json, the measured cost table ``--shard`` balances with.

Run a sweep with every check and dtype whose costs you want, save its JSON,
then turn it into the table::

    adcheck ops --check reverse,forward,gradgrad,reference,fast,fwgrad_bwgrad \\
        --dtype float32,float64,complex64,complex128 --jobs 2 --format json > sweep.json
    python bench/shard_costs.py sweep.json > runner/costs.json

The table holds, per task (``op|dtype``) and check, the time the checks of
all its samples took (microseconds, the ``seconds`` of the results summed;
a task-level error counts for every check), and per check the mean time
per sample, which ``runner.shard`` uses for a task the table does not know.
Only the relative costs matter: a slower or busier machine scales them all.
"""
from __future__ import annotations

import json
import sys
from collections import defaultdict


def table(report: dict, note: str) -> dict:
    """The cost table of one ``adcheck-report`` document."""
    checks = report["settings"]["checks"]
    costs: dict = defaultdict(lambda: defaultdict(float))
    samples: dict = defaultdict(set)
    for r in report["results"]:
        task = f"{r['op']}|{r['dtype']}"
        if r["sample"] is not None:
            samples[task].add(r["sample"])
        for check in (checks if r["check"] == "setup" else [r["check"]]):
            costs[task][check] += float(r["seconds"])
    per_sample = {}
    for check in checks:
        total = sum(c[check] for c in costs.values())
        count = sum(len(samples[t]) for t, c in costs.items() if check in c)
        per_sample[check] = round(1e6 * total / max(count, 1))
    return {"schema": "adcheck-costs", "schema_version": 1, "registry": "opinfo",
            "measured": note, "per_sample_us": per_sample,
            "costs": {task: {c: max(1, round(1e6 * s)) for c, s in sorted(by.items())}
                      for task, by in sorted(costs.items())}}


def dump(data: dict) -> str:
    """JSON with one line per task, so a regenerated table diffs task by task."""
    head = {k: v for k, v in data.items() if k != "costs"}
    lines = [json.dumps(head)[:-1] + ', "costs": {']
    rows = [f"  {json.dumps(task)}: {json.dumps(by)}" for task, by in data["costs"].items()]
    return "\n".join(lines + [",\n".join(rows), "}}"]) + "\n"


def main(argv: list) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as handle:
        report = json.load(handle)
    settings = report["settings"]
    note = (f"adcheck ops --check {','.join(settings['checks'])} --dtype "
            f"{','.join(settings['dtypes'] or [])}: {report['summary']['total']} checks in "
            f"{report['seconds']:.0f} s")
    sys.stdout.write(dump(table(report, note)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
