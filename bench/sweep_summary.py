"""Summarise a saved sweep (``adcheck ops ... --format json > run.json``).

    python bench/sweep_summary.py run.json [--top N]

Prints what a whole-registry sweep needs to be judged by: the counts by
status, where the time went (by check, by dtype, the slowest ops and
checks), and the failures and errors grouped by the first words of their
message, with one example each (op, dtype, sample, check). Reads only the
JSON report (schema adcheck-report v1).
"""
from __future__ import annotations

import argparse
import json
import re
from collections import Counter, defaultdict


def _kind(message: str) -> str:
    """A failure's or error's class: its message with the specifics taken out."""
    text = re.sub(r"^[\w.]+: ", "", message)            # the op's name
    text = re.sub(r"\(max error .*", "", text)
    text = re.sub(r"for output \d+, input \d+", "for output i, input j", text)
    text = re.sub(r"\d+(\.\d+)?(e[-+]?\d+)?", "N", text)
    return " ".join(text.split())[:110]


def _rows(title: str, counter: Counter, total: float, top: int) -> list:
    lines = [f"\n{title}"]
    for key, seconds in counter.most_common(top):
        lines.append(f"  {seconds:9.1f} s  {100 * seconds / max(total, 1e-9):5.1f} %  {key}")
    return lines


def summary(doc: dict, top: int = 10) -> str:
    results = doc["results"]
    settings = doc["settings"]
    stale = sum(r["status"] == "passed" and r["message"].startswith("passed although")
                for r in results)
    samples = {(r["op"], r["dtype"], r["sample"]) for r in results if r["sample"] is not None}
    lines = [f"registry {settings.get('registry', 'opinfo')}, checks "
             f"{','.join(settings['checks'])}, dtypes {settings.get('dtypes') or 'default'}; "
             f"wall {doc['seconds']:.0f} s, exit {doc['exit_code']}",
             "  ".join(f"{k} {v}" for k, v in doc["summary"].items()),
             f"ops {len({r['op'] for r in results})}, samples {len(samples)}, "
             f"stale known failures {stale}"]
    total = sum(r["seconds"] for r in results)
    by_check, by_dtype, by_op, by_one = Counter(), Counter(), Counter(), Counter()
    for r in results:
        by_check[r["check"]] += r["seconds"]
        by_dtype[r["dtype"]] += r["seconds"]
        by_op[r["op"]] += r["seconds"]
        by_one[r["key"]] += r["seconds"]
    lines.append(f"\ncheck time summed over workers: {total:.0f} s")
    lines += _rows("by check", by_check, total, top)
    lines += _rows("by dtype", by_dtype, total, top)
    lines += _rows("slowest ops", by_op, total, top)
    lines += _rows("slowest checks", by_one, total, top)
    for status in ("failed", "error"):
        groups: dict = defaultdict(list)
        for r in results:
            if r["status"] == status:
                groups[_kind(r["message"])].append(r)
        lines.append(f"\n{status}: {sum(len(g) for g in groups.values())} in "
                     f"{len(groups)} kinds")
        for kind, found in sorted(groups.items(), key=lambda item: -len(item[1])):
            ops = sorted({r["op"] for r in found})
            first = found[0]
            lines.append(f"  {len(found):4d} x {kind}\n"
                         f"         ops ({len(ops)}): {', '.join(ops[:8])}"
                         f"{' ...' if len(ops) > 8 else ''}\n"
                         f"         e.g. {first['key']}: {first['message'][:200]}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report")
    parser.add_argument("--top", type=int, default=10)
    options = parser.parse_args()
    with open(options.report, encoding="utf-8") as handle:
        print(summary(json.load(handle), options.top))


if __name__ == "__main__":
    main()
