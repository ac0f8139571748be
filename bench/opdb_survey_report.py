"""Reading the op_db survey: outcomes, classes, disagreements, time ratios.

Each record of ``results.jsonl`` holds one (op, dtype, sample, check) and
the three tools' results. A tool's result that is not a pass is put in a
class by the first rule of ``RULES`` whose pattern matches its error class
and message (the rules name the failure kinds the survey found; ``other``
is what none matches). A *disagreement* is a sample where adcheck's verdict
(``adcheck_gradcheck`` or ``adcheck_precise``) differs from torch's.
"""
from __future__ import annotations

import json
import re
import statistics
from collections import Counter, defaultdict
from pathlib import Path

#: (class, what it means, pattern on "ErrorClass: message") - first match wins
RULES = (
    ("timeout", "no verdict within the per-sample time limit", r"^Timeout:"),
    ("crash", "the worker process died", r"^WorkerDied:"),
    ("memory", "an allocation the machine cannot make (Jacobian or samples too large)",
     r"MemoryError|Unable to allocate|can't allocate memory|not enough memory"),
    ("low-precision output", "torch's gradcheck cannot difference an output cast to a lower "
     "precision (float32, half, complex32) from a double input",
     r"Double did not match (Float|Half|BFloat16)|not implemented for 'ComplexHalf'"),
    ("unsupported dtype", "a dtype adcheck's NumPy conversion cannot hold (bfloat16, half, "
     "complex32)", r"unsupported ScalarType|Got unsupported|BFloat16|ComplexHalf"),
    ("sparse", "sparse inputs or outputs", r"[Ss]parse|layout"),
    ("ZeroTensor", "an output or gradient that is a ZeroTensor", r"ZeroTensor"),
    ("no differentiable input", "no tensor of the sample requires grad",
     r"at least one input tensor to require gradient|contain no refengine or torch tensor"),
    ("vjp of another shape", "a vjp or grad_output whose shape differs from the tensor's",
     r"shape .* (does not|doesn't) match|[Mm]ismatch in shape|expected shape|"
     r"must have the same shape|shape mismatch"),
    ("reentrancy", "two evaluations of the same vjp or jvp differ", r"not reentrant"),
    ("non-differentiable output", "an output torch declares non-differentiable depends on "
     "an input", r"does not require grad depends on an input"),
    ("NaN or inf", "NaN or inf entries in a Jacobian or a tolerance",
     r"\bnan\b|\binf\b|NaN"),
    ("batched grad", "vmap/batched gradients differ or fail",
     r"[Bb]atched|vmap"),
    ("undefined grad", "undefined output gradients are mishandled", r"undefined"),
    ("grad dtype", "a gradient of the wrong dtype", r"wrong dtype|grad_dtypes|dtype of"),
    ("numerical mismatch", "a Jacobian differs from finite differences beyond tolerance",
     r"differs from|Jacobian mismatch|mismatch for output"),
    ("not implemented", "a derivative torch does not implement",
     r"not implemented|NotImplementedError|does not support"),
)

#: what a message alone cannot tell: the class each (op, message class) turned out to
#: be, as established case by case in bench/opdb_evidence.py
REFINED = {
    ("as_strided.partial_views", "numerical mismatch"): "storage layout",
    ("nn.functional.hardsigmoid", "numerical mismatch"): "formula precision (torch bug)",
    ("round.decimals_3", "numerical mismatch"): "discontinuity straddled",
    ("masked.var", "numerical mismatch"): "rounding noise in a zero imaginary part",
    ("masked.std", "numerical mismatch"): "rounding noise in a zero imaginary part",
    ("torch.ops.aten._safe_softmax.default", "NaN or inf"): "infinite inputs",
    ("float", "numerical mismatch"): "low-precision output",
    ("cfloat", "numerical mismatch"): "low-precision output",
    ("half", "numerical mismatch"): "low-precision output",
    ("bfloat16", "numerical mismatch"): "low-precision output",
    ("chalf", "numerical mismatch"): "low-precision output",
    ("sparse.mm.reduce", "numerical mismatch"): "sparse",
    ("as_strided_scatter", "numerical mismatch"): "torch formula error (op_db xfail)",
    ("native_group_norm", "numerical mismatch"): "torch formula error (op_db xfail)",
    ("normal", "numerical mismatch"): "torch formula error (op_db skip)",
    ("nn.functional.max_unpool1d", "numerical mismatch"): "index ties (op_db skip)",
    ("nn.functional.max_unpool2d", "numerical mismatch"): "index ties (op_db skip)",
    ("nn.functional.max_unpool3d", "numerical mismatch"): "index ties (op_db skip)",
}

STATUS_ORDER = ("pass", "fail", "error", "timeout", "crash", "not-run")
ADCHECK = ("adcheck_gradcheck", "adcheck_precise")


def load(path: Path, *more: Path) -> list:
    """The records of a results.jsonl (the "done" markers left out); the tools of
    the records of ``more`` files join those of the same (op, dtype, sample, check)."""
    def read(p):
        rows = [json.loads(line) for line in Path(p).read_text().splitlines() if line.strip()]
        return [r for r in rows if "done" not in r]
    records = read(path)
    by_key = {_key(r): r for r in records}
    for other in more:
        for row in read(other):
            if _key(row) in by_key:
                by_key[_key(row)].update({k: v for k, v in row.items() if k not in by_key[
                    _key(row)]})
    return records


def _key(record: dict) -> tuple:
    return record["op"], record["dtype"], record["sample"], record["check"]


def classify(result: dict, op: str | None = None) -> str:
    """The class of a result that is not a pass (refined for ``op`` when known)."""
    text = f"{result.get('error', '')}: {result.get('message', '')}"
    for failure in result.get("failures") or []:
        text += f" {failure.get('check', '')} {failure.get('detail') or ''}"
    found = next((name for name, _, pattern in RULES if re.search(pattern, text)), "other")
    return REFINED.get((op, found), found)


def _verdict(result: dict) -> str:
    return "pass" if result.get("status") == "pass" else "not pass"


def _example(record: dict, tool: str) -> dict:
    result = record[tool]
    first = (result.get("failures") or [{}])[0]
    return {"op": record["op"], "dtype": record["dtype"], "sample": record["sample"],
            "check": record["check"], "torch": record["torch"].get("status"),
            "status": result.get("status"), "error": result.get("error", ""),
            "message": result.get("message", "")[:400],
            "pair": [first.get("out_idx"), first.get("in_idx")] if first else None,
            "failing_check": first.get("check"), "max_error": first.get("max_error"),
            "tolerance": first.get("tolerance"),
            "known": (record.get("known") or {}).get("reason")}


def _exceptions(records: list) -> dict:
    """Errors (not check failures) by tool and class, with the ops and one message."""
    out: dict = {}
    for tool in ("torch", *ADCHECK):
        table: dict = defaultdict(lambda: {"count": 0, "ops": set(), "example": None})
        for r in records:
            res = r.get(tool, {})
            if res.get("status") not in ("error", "timeout", "crash"):
                continue
            key = f"{res.get('error', '?')} [{classify(res, r['op'])}]"
            table[key]["count"] += 1
            table[key]["ops"].add(r["op"])
            table[key]["example"] = table[key]["example"] or _example(r, tool)
        out[tool] = {k: {"count": v["count"], "ops": sorted(v["ops"]), "example": v["example"]}
                     for k, v in sorted(table.items(), key=lambda kv: -kv[1]["count"])}
    return out


def _disagreements(records: list) -> dict:
    """Samples where an adcheck tool and torch disagree, by direction and class."""
    out: dict = {}
    for tool in ADCHECK:
        groups: dict = defaultdict(list)
        for r in records:
            mine, theirs = r.get(tool, {}), r.get("torch", {})
            if "status" not in mine or mine.get("status") == "not-run" or \
                    theirs.get("status") in (None, "not-run"):
                continue
            if _verdict(mine) == _verdict(theirs):
                continue
            if mine.get("status") == "pass":
                key = f"torch {theirs['status']}, adcheck passes [{classify(theirs, r['op'])}]"
            else:
                key = f"torch passes, adcheck {mine['status']} [{classify(mine, r['op'])}]"
            groups[key].append(_example(r, tool))
        out[tool] = {k: {"count": len(v), "ops": sorted({e["op"] for e in v}), "examples": v}
                     for k, v in sorted(groups.items(), key=lambda kv: -len(kv[1]))}
    return out


def _by_class(records: list, tools: list) -> dict:
    """For every class, how many results of each tool that are not a pass fall in it,
    and the ops."""
    table: dict = defaultdict(lambda: {"ops": set(), **{t: 0 for t in tools}})
    for r in records:
        for tool in tools:
            res = r.get(tool, {})
            if res.get("status") in (None, "pass", "not-run"):
                continue
            row = table[classify(res, r["op"])]
            row[tool] += 1
            row["ops"].add(r["op"])
    return {k: dict(v, ops=sorted(v["ops"])) for k, v in sorted(table.items())}


def _agreed(records: list) -> dict:
    """Samples where torch and both adcheck tools fail (or error): by op, with the
    known failure op_db declares, if any."""
    out: dict = defaultdict(lambda: {"samples": 0, "known": None, "torch": "", "adcheck": ""})
    for r in records:
        if all(r.get(t, {}).get("status") in ("fail", "error") for t in ("torch", *ADCHECK)):
            row = out[r["op"]]
            row["samples"] += 1
            row["known"] = (r.get("known") or {}).get("reason")
            row["torch"] = row["torch"] or \
                f"{r['torch'].get('error', '')} [{classify(r['torch'], r['op'])}]"
            mine = r["adcheck_precise"]
            row["adcheck"] = row["adcheck"] or \
                f"{mine.get('error', mine['status'])} [{classify(mine, r['op'])}]"
    return dict(out)


def _times(records: list) -> dict:
    """Time of each adcheck tool over torch's gradcheck (fast mode as op_db runs it, and
    slow mode when the records have it), on samples where both passed."""
    out = {}
    for tool in ADCHECK:
        for base in ("torch", "torch_slow"):
            pairs = [(r[tool]["seconds"], r[base]["seconds"]) for r in records
                     if r.get(tool, {}).get("status") == "pass"
                     and r.get(base, {}).get("status") == "pass" and r[base].get("seconds")]
            if pairs:
                out[f"{tool} / {base}"] = _ratios(pairs)
    return out


def _ratios(pairs: list) -> dict:
    ratios = [a / t for a, t in pairs if t > 0]
    mine, theirs = sum(a for a, _ in pairs), sum(t for _, t in pairs)
    return {"samples": len(pairs), "total_ratio": mine / theirs,
            "median_ratio": statistics.median(ratios), "adcheck_s": mine, "torch_s": theirs}


def summarize(records: list) -> dict:
    """Everything the markdown shows, as data."""
    tools = [t for t in ("torch", "torch_slow", *ADCHECK) if any(t in r for r in records)]
    statuses = {tool: dict(Counter(r.get(tool, {}).get("status", "missing") for r in records))
                for tool in tools}
    return {"records": len(records), "ops": len({r["op"] for r in records}),
            "dtypes": dict(Counter(r["dtype"] for r in records)), "statuses": statuses,
            "exceptions": _exceptions(records), "disagreements": _disagreements(records),
            "agreed_failures": _agreed(records), "by_class": _by_class(records, tools),
            "times": _times(records),
            "classes": {name: meaning for name, meaning, _ in RULES}}


def _fmt(value) -> str:
    return "-" if value is None else f"{value:.1e}" if isinstance(value, float) else str(value)


def _md_exceptions(summary: dict) -> list:
    lines = ["## Exceptions instead of a verdict", ""]
    for tool, table in summary["exceptions"].items():
        lines.append(f"### {tool}: {sum(v['count'] for v in table.values())} samples")
        lines.append("")
        if not table:
            lines += ["none", ""]
            continue
        lines += ["| error [class] | samples | ops | example |", "|---|---|---|---|"]
        for key, v in table.items():
            ex = v["example"]
            ops = ", ".join(v["ops"][:8]) + (f" (+{len(v['ops']) - 8})" if len(v["ops"]) > 8
                                            else "")
            text = ex["message"][:160].replace("|", "\\|")
            lines.append(f"| {key} | {v['count']} | {ops} | {ex['op']} {ex['dtype']}"
                         f"[{ex['sample']}]: {text} |")
        lines.append("")
    return lines


def _md_disagreements(summary: dict) -> list:
    lines = ["## Disagreements with torch's gradcheck", ""]
    for tool, groups in summary["disagreements"].items():
        lines.append(f"### {tool}: {sum(v['count'] for v in groups.values())} samples")
        lines.append("")
        if not groups:
            lines += ["none", ""]
            continue
        lines += ["| direction [class] | samples | ops | example (pair, max error, tolerance) |",
                  "|---|---|---|---|"]
        for key, v in groups.items():
            ex = v["examples"][0]
            ops = ", ".join(v["ops"][:8]) + (f" (+{len(v['ops']) - 8})" if len(v["ops"]) > 8
                                            else "")
            text = ex["message"][:160].replace("|", "\\|")
            lines.append(f"| {key} | {v['count']} | {ops} | {ex['op']} {ex['dtype']}"
                         f"[{ex['sample']}] {ex['failing_check'] or ''} pair {ex['pair']}, "
                         f"{_fmt(ex['max_error'])} > {_fmt(ex['tolerance'])}: {text} |")
        lines.append("")
    return lines


def _md_classes(summary: dict) -> list:
    tools = list(summary["statuses"])
    lines = ["## Every result that is not a pass, by class", "",
             "| class | " + " | ".join(tools) + " | ops |", "|---|" + "---|" * (len(tools) + 1)]
    for name, row in summary["by_class"].items():
        ops = ", ".join(row["ops"][:10]) + (f" (+{len(row['ops']) - 10})"
                                            if len(row["ops"]) > 10 else "")
        lines.append(f"| {name} | " + " | ".join(str(row.get(t, 0)) for t in tools)
                     + f" | {ops} |")
    return lines + [""]


def _md_agreed(summary: dict) -> list:
    rows = summary["agreed_failures"]
    lines = ["## Samples torch and adcheck both fail", ""]
    if not rows:
        return lines + ["none", ""]
    lines += ["| op | samples | torch [class] | adcheck precise [class] | op_db declares |",
              "|---|---|---|---|---|"]
    for op, row in sorted(rows.items()):
        lines.append(f"| {op} | {row['samples']} | {row['torch']} | {row['adcheck']} | "
                     f"{row['known'] or '-'} |")
    return lines + [""]


def markdown(summary: dict) -> str:
    """The short markdown summary of a survey."""
    lines = ["# op_db survey (generated by bench/opdb_survey.py)", "",
             f"{summary['records']} (op, dtype, sample, check) records over {summary['ops']} "
             f"ops; dtypes {summary['dtypes']}.", "", "| tool | " +
             " | ".join(STATUS_ORDER) + " |", "|---|" + "---|" * len(STATUS_ORDER)]
    for tool, counts in summary["statuses"].items():
        lines.append(f"| {tool} | " + " | ".join(str(counts.get(s, 0)) for s in STATUS_ORDER)
                     + " |")
    lines += ["", "## Time against torch's gradcheck (samples both passed)", "",
              "| adcheck tool / torch tool | samples | total ratio | median ratio | adcheck s "
              "| torch s |",
              "|---|---|---|---|---|---|"]
    for tool, t in summary["times"].items():
        lines.append(f"| {tool} | {t['samples']} | {t['total_ratio']:.2f} | "
                     f"{t['median_ratio']:.2f} | {t['adcheck_s']:.1f} | {t['torch_s']:.1f} |")
    lines.append("")
    lines += _md_classes(summary)
    lines += _md_exceptions(summary) + _md_disagreements(summary) + _md_agreed(summary)
    return "\n".join(lines) + "\n"
