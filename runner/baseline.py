"""Baselines: accepted failures, so CI fails only on new ones.

A baseline file is JSON::

    {"schema": "adcheck-baseline", "schema_version": 1, "registry": "opinfo",
     "accepted": [{"key": "sgn|complex128|2|reverse", "op": "sgn", "dtype": "complex128",
                   "sample": 2, "check": "reverse", "status": "failed",
                   "message": "..."}]}

Only ``registry`` and ``key`` are read back; the other fields are there for
the reader. A key is ``op|dtype|sample|check`` (``*`` for the sample of a
task-level error); ``registry`` names the registry the keys come from
(``--registry``; a file without it was written by adcheck's own), and a run
of another registry refuses the file, since the same key means another op.
``adcheck ops --write-baseline FILE`` writes one from a run, and
``adcheck baseline REPORT.json`` from a saved JSON report.
"""
from __future__ import annotations

import json
from pathlib import Path

from adcheck.runner.errors import RunnerError
from adcheck.runner.results import BaselineDiff, CheckResult, RunReport

SCHEMA = "adcheck-baseline"
SCHEMA_VERSION = 1


class BaselineError(RunnerError):
    """An unreadable or malformed baseline file."""


def load(path: str | Path, registry: str = "opinfo") -> set[str]:
    """The accepted keys of the baseline at ``path``, written by a run of
    ``registry`` (``BaselineError`` when another registry's run wrote it)."""
    p = Path(path)
    try:
        data = json.loads(p.read_text())
    except FileNotFoundError:
        raise BaselineError(f"baseline {str(p)!r}: no such file; write one with "
                            "'adcheck ops --write-baseline FILE'") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"baseline {str(p)!r}: cannot read it ({exc})") from None
    except json.JSONDecodeError as exc:
        raise BaselineError(f"baseline {str(p)!r} is not JSON (line {exc.lineno}, "
                            f"column {exc.colno}: {exc.msg})") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise BaselineError(f"baseline {str(p)!r}: not an adcheck baseline (expected "
                            f"\"schema\": \"{SCHEMA}\")")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise BaselineError(f"baseline {str(p)!r}: schema_version "
                            f"{data.get('schema_version')!r} is not supported (expected "
                            f"{SCHEMA_VERSION}); rewrite it with this adcheck")
    written = data.get("registry", "opinfo")
    if written != registry:
        raise BaselineError(f"baseline {str(p)!r} holds failures of the registry {written!r}, "
                            f"not of {registry!r}: its keys name other ops; pass "
                            f"--registry {written} or a baseline written by a run of "
                            f"{registry!r}")
    entries = data.get("accepted")
    if not isinstance(entries, list) or not all(
            isinstance(e, dict) and isinstance(e.get("key"), str) for e in entries):
        raise BaselineError(f"baseline {str(p)!r}: \"accepted\" must be a list of objects "
                            "with a \"key\"")
    return {e["key"] for e in entries}


def compare(results: list[CheckResult], accepted: set[str], path: str) -> BaselineDiff:
    """Split the run's failures into new and accepted, and find the fixed."""
    diff = BaselineDiff(str(path))
    for r in results:
        if r.failing:
            (diff.accepted if r.key in accepted else diff.new).append(r.key)
        elif r.key in accepted and r.status == "passed":
            diff.fixed.append(r.key)
    return diff


def entries_from_results(results: list[CheckResult]) -> list[dict]:
    return [{"key": r.key, "op": r.op, "dtype": r.dtype, "sample": r.sample,
             "check": r.check, "status": r.status, "message": r.message}
            for r in results if r.failing]


def document(entries: list[dict], registry: str = "opinfo") -> dict:
    return {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "registry": registry,
            "accepted": sorted(entries, key=lambda e: e["key"])}


def registry_of(report_settings: dict) -> str:
    """The registry a run's settings name (adcheck's own when they name none)."""
    return (report_settings or {}).get("registry") or "opinfo"


def text(report: RunReport) -> str:
    """The baseline file that accepts the run's failures."""
    return json.dumps(document(entries_from_results(report.results),
                               registry_of(report.settings)), indent=2) + "\n"


def write(path: str | Path, report: RunReport) -> int:
    """Write the run's failures as the accepted set, whole or not at all
    (``OSError`` when it cannot be written); returns how many."""
    from adcheck.runner.files import write_atomic
    write_atomic(path, text(report))
    return len(entries_from_results(report.results))


def from_json_report(data: dict) -> list[dict]:
    """Baseline entries from a saved ``--format json`` report."""
    if not isinstance(data, dict) or data.get("schema") != "adcheck-report":
        raise BaselineError("not an adcheck JSON report (expected \"schema\": "
                            "\"adcheck-report\"); save one with '--format json > run.json'")
    return [{k: r.get(k) for k in ("key", "op", "dtype", "sample", "check", "status", "message")}
            for r in data.get("results", []) if r.get("status") in ("failed", "error")]
