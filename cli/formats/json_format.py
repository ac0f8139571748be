"""``--format json``: the machine-readable report, schema ``adcheck-report`` v1.

The document is one JSON object. Fields are only ever added within a
schema version; a removal or a change of meaning bumps ``schema_version``.

```
{
  "schema": "adcheck-report",           constant
  "schema_version": 1,                  integer
  "adcheck_version": "0.1.0",
  "command": "ops" | "check",
  "settings": {                          how the run was asked for
    "engine": "refengine" | "torch" | "jax", "precise": bool, "checks": [str],
    "dtypes": [str] | null, "patterns": [str], "family": [str] | null,
    "seed": int, "timeout": float | null, "fail_fast": bool,
    "jacobian": "auto" | "dense" | "compressed" | "probed",  --jacobian
    "memory_budget": int | null,         bytes each check may hold (--memory-budget)
    "explore": float | null,             --explore: its budget in seconds (0: the
                                         default budget); null: not exploring
    "batching": bool,                    Jacobians built in batches (vmap)
    "allow_empty": bool, "op": str | null,   --allow-empty; the op of 'adcheck op'
    "harvest": bool,                     'check --harvest'
    "plugins": [str],                    the --plugin files
    "registry": "opinfo" | "torch",      where the ops came from (--registry); a
                                         baseline or a merge keeps to one registry
    "samples_per_dtype": int | null,     --registry torch: the samples checked per op
    "torch_version": str,                and dtype (null: all), and torch's version
    "target": str | null,                MODULE:OBJECT or the plugin file of 'check'
    "kind": str, "inputs": [str]         'check MODULE:OBJECT' only: what the object
                                         is, and the input sets (with --args joined)
    "layouts": [{"inputs": [[shape, complex, name] | null],
                 "outputs": [[shape, complex] | null]} | null]
                                         'check MODULE:OBJECT' only, one per input set:
                                         its tensors' shapes and complexness (null:
                                         the object did not run on it before the run)
  },
  "interrupted": bool,                   stopped by a signal: the results are partial
  "signal": "SIGINT" | "SIGTERM" | "SIGHUP" | null,   the signal that stopped it
  "error": str | null,                   why the run could not go on (the worker
                                         processes cannot run its tasks), or null
  "stopped_early": bool,                 --fail-fast stopped at the first failure
  "seconds": float,                      wall time of the run
  "exit_code": 0 | 1 | 2 | 3 | 129 | 130 | 143,   the status the command exits with
                                         (2: the run broke, or an output could not
                                         be written; 3: nothing failed but some op or
                                         target had every check skipped (0 with
                                         settings.allow_empty); 129/130/143:
                                         SIGHUP/SIGINT/SIGTERM)
  "unjudged": {op: [str]},               each op or target whose every check was
                                         skipped, with the distinct reasons
  "summary": {"total": int, "passed": int, "failed": int,
              "known-failure": int, "skipped": int, "error": int},
  "results": [                           one per op, dtype, sample and check
    {
      "key": "sin|float64|0|reverse",   op|dtype|sample|check ("*": no sample)
      "op": str, "family": str,          family; for 'check MODULE:OBJECT' the kind
      "dtype": str,                      the inputs' dtypes joined by "+" for 'check'
      "sample": int | null,              index in the op's sample_inputs(dtype)
      "sample_name": str,
      "check": "reverse" | "forward" | "fast" | "gradgrad" | "fwgrad_bwgrad"
               | "reference" | "setup",  "setup": the task failed before a check ran
      "status": "passed" | "failed" | "known-failure" | "skipped" | "error",
      "message": str,                    one line: why it failed, was skipped, errored
      "diagnosis": str | null,           the kind of error, when recognised
      "seconds": float,
      "seed": int | null,                seed of the check's random probes
      "unbatched": str | null,           why Jacobians were built one vector at a
                                         time (no batching rule), or null
      "precision": str | null,           a precise check of a float32/bfloat16/float16
                                         formula: what it was compared with and the
                                         smallest relative error it could detect
      "resolution": float | null,        that smallest detectable relative error
      "plan": str | null,                how its Jacobians were built: "dense",
                                         "compressed", "chunked" or "probed"
      "escape": {"forward": float, "reverse": float, "relative_error": float} | null,
                                         a probed check: the probability that an
                                         entry wrong by relative_error of its row's
                                         norm escaped, by AD mode
      "traceback": str | null,           an error: the traceback of the user's code
                                         (its frames only), null when none is
      "dispute": str | null,             a failed op_db check in float64/complex128:
                                         whether torch's gradcheck fails the sample
                                         too, and if not the evidence of who is right
      "failures": [                      failing (out_idx, in_idx) pairs
        {"check": str, "mode": str, "against": str, "order": 1 | 2,
         "out_idx": int | null,
         "in_idx": int | null, "in_name": str | null,   in_name: a module's parameter
                                         ("layer.0.weight"), a pytree leaf's path, or null
         "max_error": float | str, "where": [int] | null,
         "tolerance": float | str | null, "diagnosis": str | null, "detail": str | null,
         "origin": [int, int] | null}   a Jacobian too large to hold was checked in
                                         chunks or cells: the [row, column] of the
                                         window the HTML report draws, else null
      ]
    }
  ],
  "slowest": [{"op": str, "seconds": float}],   the five slowest ops
  "baseline": null | {"path": str, "new": [key], "accepted": [key], "fixed": [key]},
  "shard": null                          a whole run ('adcheck ops' without --shard)
         | {"index": int, "count": int,  'adcheck ops --shard K/N': K and N,
            "plan": ["op|dtype"],        every task of the whole run, in its order,
            "tasks": ["op|dtype"]}       and this shard's tasks
         | {"merged": int}               'adcheck merge' of that many shards
}
```

Non-finite floats are written as the strings ``"inf"``, ``"-inf"``, ``"nan"``
so the output is strict JSON.
"""
from __future__ import annotations

import json
import math
from typing import TextIO

from adcheck.runner.results import RunReport

SCHEMA = "adcheck-report"
SCHEMA_VERSION = 1


def _version() -> str:
    from importlib import metadata
    try:
        return metadata.version("adcheck")
    except metadata.PackageNotFoundError:
        return "unknown"


def _finite(value):
    """Replace non-finite floats, recursively, by their names (strict JSON)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def document(report: RunReport) -> dict:
    """The report as a schema v1 document."""
    counts = report.counts()
    baseline = None
    if report.baseline is not None:
        b = report.baseline
        baseline = {"path": b.path, "new": b.new, "accepted": b.accepted, "fixed": b.fixed}
    return _finite({
        "schema": SCHEMA, "schema_version": SCHEMA_VERSION, "adcheck_version": _version(),
        "command": report.command, "settings": dict(report.settings),
        "interrupted": report.interrupted,
        "signal": (report.signal or "SIGINT") if report.interrupted else None,
        "error": report.error, "stopped_early": report.stopped_early,
        "seconds": round(report.seconds, 3), "exit_code": int(report.exit_code()),
        "unjudged": report.unjudged(),
        "summary": {"total": len(report.results), **counts},
        "results": [r.to_dict() for r in report.results],
        "slowest": [{"op": op, "seconds": round(s, 3)} for op, s in report.slowest()],
        "baseline": baseline, "shard": report.shard,
    })


class JsonFormat:
    """Writes ``document(report)`` as indented JSON."""

    name = "json"

    def render(self, report: RunReport, out: TextIO, *, color: bool = False,
               verbosity: int = 0) -> None:
        json.dump(document(report), out, indent=2, allow_nan=False)
        out.write("\n")
