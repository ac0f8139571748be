"""Joining shard reports into the report of the whole run (``adcheck merge``).

``merge(documents)`` takes the JSON reports (``--format json``, schema
``adcheck-report`` v1) of the N shards of one sweep (``adcheck ops --shard
K/N``) and returns one ``RunReport``: the results in the order the unsharded
run gives them (plan order, then sample and check), the counts, and the
exit status that run would have had (a failure anywhere fails it; a shard
that was stopped by a signal, or broke, makes the whole so; a baseline
recorded by the shards is compared over all results). Its ``seconds`` is the
longest shard's: the shards ran side by side.

It refuses, with ``MergeError`` (exit status 2) naming the file and what to
do, anything that is not the N shards of one run: a report that is not a
shard's, shards of different selections or settings, a shard missing or
given twice, results outside a shard's tasks.
"""
from __future__ import annotations

from dataclasses import fields

from adcheck.runner.errors import RunnerError
from adcheck.runner.record import RunRecord
from adcheck.runner.results import BaselineDiff, CheckResult, RunReport
from adcheck.runner.shard import task_id

SCHEMA = "adcheck-report"


class MergeError(RunnerError):
    """Reports that are not the complete set of shards of one run."""


def _result(data: dict) -> CheckResult:
    names = {f.name for f in fields(CheckResult) if f.metadata.get("json", True)}
    return CheckResult(**{k: v for k, v in data.items() if k in names})


def _shard_of(name: str, data) -> dict:
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise MergeError(f"{name} is not an adcheck JSON report (expected \"schema\": "
                         f"\"{SCHEMA}\"); save each shard with 'adcheck ops --shard K/N "
                         "--format json > shard-K.json'")
    if data.get("schema_version") != 1:
        raise MergeError(f"{name}: schema_version {data.get('schema_version')!r} is not "
                         "supported (expected 1); merge reports of this adcheck")
    shard = data.get("shard")
    if not isinstance(shard, dict) or "index" not in shard:
        raise MergeError(f"{name} is the report of an unsharded run; merge the reports of "
                         "'adcheck ops --shard K/N' runs")
    return shard


def _check_set(named: list) -> int:
    """The number of shards; ``MergeError`` unless the reports are shards 1 to N of
    one selection and one set of settings."""
    (first_name, first), *others = named
    count = first["shard"]["count"]
    for name, data in others:
        for what, key in (("the number of shards", lambda d: d["shard"]["count"]),
                          ("the selection (ops and dtypes)", lambda d: d["shard"]["plan"]),
                          ("the settings", lambda d: d["settings"]),
                          ("the command", lambda d: d["command"]),
                          ("the baseline", lambda d: (d.get("baseline") or {}).get("path"))):
            if key(data) != key(first):
                raise MergeError(f"{first_name} and {name} differ in {what}: they are not "
                                 "shards of one run; run every shard with the same options")
    seen: dict = {}
    for name, data in named:
        index = data["shard"]["index"]
        if index in seen:
            raise MergeError(f"shard {index}/{count} is given twice ({seen[index]} and "
                             f"{name}); give each shard's report once")
        seen[index] = name
    missing = [str(k) for k in range(1, count + 1) if k not in seen]
    if missing:
        raise MergeError(f"shard{'s' if len(missing) > 1 else ''} {', '.join(missing)} of "
                         f"{count} {'are' if len(missing) > 1 else 'is'} missing; give the "
                         f"reports of all {count} shards")
    return count


def _ordered_results(named: list) -> list:
    plan = named[0][1]["shard"]["plan"]
    position = {tid: p for p, tid in enumerate(plan)}
    owner: dict = {}
    for name, data in named:
        for tid in data["shard"]["tasks"]:
            owner[tid] = name
    if sorted(owner) != sorted(plan):
        raise MergeError("the shards' tasks do not add up to the plan they record; the "
                         "reports were edited or come from different adcheck versions")
    keyed = []
    for name, data in named:
        for order, entry in enumerate(data.get("results", [])):
            tid = task_id(entry.get("op"), entry.get("dtype"))
            if owner.get(tid) != name:
                raise MergeError(f"{name} holds a result of {tid}, which is not one of its "
                                 "tasks; merge unedited shard reports")
            keyed.append((position[tid], data["shard"]["index"], order, _result(entry)))
    return [r for *_, r in sorted(keyed, key=lambda k: k[:3])]


def _baseline(named: list, results: list) -> BaselineDiff | None:
    recorded = [d.get("baseline") for _, d in named]
    if recorded[0] is None:
        return None
    new = {k for b in recorded for k in b["new"]}
    accepted = {k for b in recorded for k in b["accepted"]}
    fixed = {k for b in recorded for k in b["fixed"]}
    keys = [r.key for r in results]
    return BaselineDiff(recorded[0]["path"], [k for k in keys if k in new],
                        [k for k in keys if k in accepted], [k for k in keys if k in fixed])


def merge(named: list) -> RunReport:
    """The report of the whole run from ``[(name, document)]``, the shards' JSON
    reports (``name``: how errors call each, its file name)."""
    if not named:
        raise MergeError("no report given; pass the JSON report of every shard")
    for name, data in named:
        _shard_of(name, data)
    named = sorted(named, key=lambda item: item[1]["shard"]["index"])
    count = _check_set(named)
    results = _ordered_results(named)
    stopped = [d for _, d in named if d.get("interrupted")]
    broken = [(d["shard"]["index"], d["error"]) for _, d in named if d.get("error")]
    report = RunReport(named[0][1]["command"], RunRecord.from_dict(named[0][1]["settings"]),
                       results,
                       interrupted=bool(stopped),
                       stopped_early=any(d.get("stopped_early") for _, d in named),
                       signal=stopped[0].get("signal") if stopped else None,
                       error="; ".join(f"shard {k}: {e}" for k, e in broken) or None,
                       seconds=max(float(d.get("seconds") or 0) for _, d in named))
    report.baseline = _baseline(named, results)
    report.shard = {"merged": count}
    return report
