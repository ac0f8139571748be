"""The sweep finds the same with batching on and off: every check of a set of
ops across the families, compared result by result. Batching is an option of
the run (``build_settings(batching=...)``), carried to its worker processes."""
from __future__ import annotations

from adcheck.runner.registry import OPINFO
from adcheck.runner.run import run_tasks
from adcheck.runner.selection import plan, select
from adcheck.runner.tasks import build_settings

OPS = ("sin", "mul", "softmax", "linalg.det", "index_select", "masked_select",
       "abs", "exp_")
CHECKS = ("reverse", "forward", "gradgrad", "fwgrad_bwgrad", "fast")


def _results(batched: bool) -> dict:
    settings = build_settings(CHECKS, batching=batched, timeout=300.0)
    outcome = run_tasks(plan(select(OPINFO, OPS).infos, None, settings), jobs=1)
    return {r.key: r.to_dict() for r in outcome.results}


def test_batching_changes_no_result_of_the_sweep():
    batched, looped = _results(True), _results(False)
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
