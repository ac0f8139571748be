"""The sweep finds the same with batching on and off: every check of a set of
ops across the families, compared result by result."""
from __future__ import annotations

from adcheck.gradcheck.core.batching import batching_enabled, set_batching

OPS = ("sin", "mul", "softmax", "linalg.det", "index_select", "masked_select",
       "abs", "exp_")
CHECKS = "reverse,forward,gradgrad,fwgrad_bwgrad,fast"


def _results(run_json, batched: bool) -> dict:
    before = batching_enabled()
    set_batching(batched)
    try:
        _, doc = run_json("ops", *OPS, "--check", CHECKS, "--jobs", "1")
    finally:
        set_batching(before)
    return {r["key"]: r for r in doc["results"]}


def test_batching_changes_no_result_of_the_sweep(run_json):
    batched, looped = _results(run_json, True), _results(run_json, False)
    assert batched.keys() == looped.keys()
    for key, result in batched.items():
        other = looped[key]
        assert (result["status"], result["diagnosis"]) == (other["status"], other["diagnosis"]), key
        assert other["unbatched"] is None or "vmap" not in other["unbatched"], key
    ran = sum(r["status"] != "skipped" for r in batched.values())
    assert ran > 200, ran
    # the batched run did batch: only masked_select (data-dependent size) loops
    looping = {r["op"] for r in batched.values() if r["unbatched"]}
    assert looping <= {"masked_select"}, looping
