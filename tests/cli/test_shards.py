"""adcheck ops --shard K/N and adcheck merge: three shards make the unsharded run.

The oracle is the unsharded sweep itself: the merged report of its three
shards must hold the same results in the same order (all but the timings),
the same counts and the same exit status, in JSON, in JUnit XML and with a
baseline; every task must run in exactly one shard; anything that is not
the full set of shards of one run must be refused with exit status 2.
"""
import json
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner
from cli_paths import WRONG_OPS

from adcheck.cli.main import cli

#: a failing op and its right neighbour (the plugin), and two registry ops in two dtypes
SWEEP = ("ops", "cli_*", "exp", "sin", "--plugin", WRONG_OPS, "--dtype",
         "float64,complex128", "--check", "reverse,forward", "--jobs", "2")


def _invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def _comparable(doc: dict) -> dict:
    results = [{k: v for k, v in r.items() if k != "seconds"} for r in doc["results"]]
    return {"results": results, "summary": doc["summary"], "exit_code": doc["exit_code"],
            "settings": doc["settings"], "baseline": doc["baseline"]}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The unsharded run (exit status, JSON; its JUnit file and the baseline of its
    failures beside the shards) and the paths of its 3 shards' JSON."""
    folder = tmp_path_factory.mktemp("shards")
    whole = _invoke(*SWEEP, "--format", "json", "--junit-xml", folder / "whole.xml",
                    "--write-baseline", folder / "baseline.json")
    paths = []
    for k in (1, 2, 3):
        part = _invoke(*SWEEP, "--shard", f"{k}/3", "--format", "json")
        assert part.exit_code in (0, 1), part.stderr
        paths.append(folder / f"shard-{k}.json")
        paths[-1].write_text(part.stdout)
    return whole.exit_code, json.loads(whole.stdout), paths


def test_three_shards_merged_are_the_unsharded_run(runs):
    status, whole, paths = runs
    merged = _invoke("merge", *paths, "--format", "json")
    assert status == 1 and merged.exit_code == status
    doc = json.loads(merged.stdout)
    assert _comparable(doc) == _comparable(whole)
    assert doc["shard"] == {"merged": 3} and whole["shard"] is None


def test_every_task_runs_in_exactly_one_shard(runs):
    _, whole, paths = runs
    docs = [json.loads(p.read_text()) for p in paths]
    planned = list(dict.fromkeys(f"{r['op']}|{r['dtype']}" for r in whole["results"]))
    assert all(d["shard"]["plan"] == planned for d in docs)
    owned = [t for d in docs for t in d["shard"]["tasks"]]
    assert sorted(owned) == sorted(planned)
    assert all(d["shard"]["tasks"] for d in docs)          # 6 tasks: none idle
    for d in docs:
        assert {f"{r['op']}|{r['dtype']}" for r in d["results"]} == set(d["shard"]["tasks"])


def test_the_merged_junit_file_is_the_unsharded_one(runs, tmp_path):
    _, _, paths = runs
    _invoke("merge", *paths, "--junit-xml", tmp_path / "merged.xml", "-q")

    def cases(path):
        suite = ET.parse(path).getroot()[0]
        counts = {k: suite.get(k) for k in ("tests", "failures", "errors", "skipped")}
        return counts, [(c.get("classname"), c.get("name"), [e.tag for e in c])
                        for c in suite.iter("testcase")]
    assert cases(tmp_path / "merged.xml") == cases(paths[0].parent / "whole.xml")
    props = {p.get("name"): p.get("value")
             for p in ET.parse(tmp_path / "merged.xml").getroot().iter("property")}
    assert props["shard"] == "3 merged" and props["exit_code"] == "1"


def test_a_baseline_applies_to_the_merged_run_as_to_the_whole(runs, tmp_path):
    _, _, paths = runs
    baseline = paths[0].parent / "baseline.json"
    whole = _invoke(*SWEEP, "--baseline", baseline, "--format", "json")
    merged = _invoke("merge", *paths, "--baseline", baseline, "--format", "json")
    assert whole.exit_code == merged.exit_code == 0
    assert json.loads(merged.stdout)["baseline"]["accepted"] == \
        json.loads(whole.stdout)["baseline"]["accepted"] != []


def test_merge_writes_html_with_a_reproducer_per_failure(runs, tmp_path):
    _, whole, paths = runs
    result = _invoke("merge", *paths, "--html", tmp_path / "merged.html", "-q")
    text = (tmp_path / "merged.html").read_text()
    failed = [r for r in whole["results"] if r["status"] == "failed"]
    assert result.exit_code == 1 and failed
    assert text.count("runner.rebuild(") == len(failed)


def _edited(paths, tmp_path, index, **changes):
    doc = json.loads(paths[index].read_text())
    for key, value in changes.items():
        target = doc
        *path, last = key.split("__")
        for part in path:
            target = target[part]
        target[last] = value
    out = tmp_path / f"edited-{index}-{'-'.join(changes)}.json"
    out.write_text(json.dumps(doc))
    return out


def test_a_shard_stopped_by_a_signal_makes_the_merged_run_partial(runs, tmp_path):
    _, _, paths = runs
    stopped = _edited(paths, tmp_path, 1, interrupted=True, signal="SIGTERM")
    result = _invoke("merge", paths[0], stopped, paths[2], "-q")
    assert result.exit_code == 143


@pytest.mark.parametrize("case, message", [
    ("missing", "shard 2 of 3 is missing; give the reports of all 3 shards"),
    ("twice", "shard 1/3 is given twice"),
    ("settings", "differ in the settings: they are not shards of one run"),
    ("selection", "differ in the selection (ops and dtypes)"),
    ("count", "differ in the number of shards"),
    ("unsharded", "is the report of an unsharded run"),
    ("not a report", "is not an adcheck JSON report"),
    ("not json", "is not JSON"),
])
def test_what_is_not_one_run_s_shards_exits_2_saying_why(runs, tmp_path, case, message):
    _, whole, paths = runs
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json")
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps(whole))
    given = {
        "missing": [paths[0], paths[2]],
        "twice": [paths[0], paths[0], paths[1], paths[2]],
        "settings": [paths[0], _edited(paths, tmp_path, 1, settings__seed=7), paths[2]],
        "selection": [paths[0], _edited(paths, tmp_path, 1, shard__plan=["sin|float64"]),
                      paths[2]],
        "count": [paths[0], _edited(paths, tmp_path, 1, shard__count=4), paths[2]],
        "unsharded": [plain],
        "not a report": [_edited(paths, tmp_path, 0, schema="something-else")],
        "not json": [garbage],
    }[case]
    result = _invoke("merge", *given)
    assert result.exit_code == 2
    assert message in result.stderr and result.stdout == ""


def test_a_bad_shard_exits_2_before_any_work():
    for text in ("0/3", "4/3", "3", "a/b", "1/0"):
        result = _invoke("ops", "sin", "--shard", text)
        assert result.exit_code == 2
        assert "--shard expects K/N with 1 <= K <= N" in result.stderr


def test_more_shards_than_tasks_leave_some_empty_and_still_merge(tmp_path):
    paths = []
    for k in (1, 2, 3):
        result = _invoke("ops", "sin", "--dtype", "float64", "--check", "reverse",
                         "--shard", f"{k}/3", "--format", "json")
        assert result.exit_code == 0
        paths.append(tmp_path / f"{k}.json")
        paths[-1].write_text(result.stdout)
    assert sum(len(json.loads(p.read_text())["shard"]["tasks"]) for p in paths) == 1
    merged = _invoke("merge", *paths, "--format", "json")
    assert merged.exit_code == 0 and json.loads(merged.stdout)["summary"]["passed"] > 0
