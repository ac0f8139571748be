"""adcheck ops: exit status, the JSON schema, JUnit XML, and --jobs equivalence."""
import importlib.util
import json
import xml.etree.ElementTree as ET

import pytest
from cli_paths import CLI_TEST_OPS, WRONG_OPS

TOP_LEVEL = {"schema": str, "schema_version": int, "adcheck_version": str, "command": str,
             "settings": dict, "interrupted": bool, "signal": (str, type(None)),
             "error": (str, type(None)), "stopped_early": bool,
             "seconds": (int, float), "exit_code": int, "summary": dict, "results": list,
             "slowest": list, "baseline": (dict, type(None)), "shard": (dict, type(None)),
             "unjudged": dict}
RESULT = {"key": str, "op": str, "family": str, "dtype": str, "sample": (int, type(None)),
          "sample_name": str, "check": str, "status": str, "message": str,
          "diagnosis": (str, type(None)), "seconds": (int, float),
          "seed": (int, type(None)), "failures": list, "unbatched": (str, type(None)),
          "precision": (str, type(None)), "resolution": (float, type(None)),
          "dispute": (str, type(None)), "plan": (str, type(None)),
          "escape": (dict, type(None)), "traceback": (str, type(None))}
FAILURE = {"check": str, "mode": str, "against": str, "order": int, "out_idx": (int, type(None)),
           "in_idx": (int, type(None)), "in_name": (str, type(None)),
           "max_error": (float, str), "where": (list, type(None)),
           "tolerance": (float, str, type(None)), "diagnosis": (str, type(None)),
           "detail": (str, type(None)), "origin": (list, type(None))}
STATUSES = {"passed", "failed", "known-failure", "skipped", "error"}


def _conforms(obj, fields):
    assert set(obj) == set(fields), set(obj) ^ set(fields)
    for name, kind in fields.items():
        assert isinstance(obj[name], kind), (name, obj[name])


def assert_schema_v1(doc):
    _conforms(doc, TOP_LEVEL)
    assert (doc["schema"], doc["schema_version"]) == ("adcheck-report", 1)
    assert set(doc["summary"]) == {"total"} | STATUSES
    assert doc["summary"]["total"] == len(doc["results"])
    for status in STATUSES:
        assert doc["summary"][status] == sum(r["status"] == status for r in doc["results"])
    for r in doc["results"]:
        _conforms(r, RESULT)
        assert r["status"] in STATUSES
        sample = "*" if r["sample"] is None else str(r["sample"])
        assert r["key"] == f"{r['op']}|{r['dtype']}|{sample}|{r['check']}"
        for failure in r["failures"]:
            _conforms(failure, FAILURE)


def test_the_json_says_which_checks_ran_unbatched(run_json):
    # masked_select's size depends on its values: no batching rule can exist
    _, doc = run_json("ops", "masked_select", "exp", "--check", "reverse", "--dtype", "float64")
    unbatched = {r["op"]: r["unbatched"] for r in doc["results"] if r["status"] == "passed"}
    assert "masked_select" in unbatched["masked_select"]
    assert unbatched["exp"] is None


def test_a_passing_sweep_exits_0_with_a_summary_table(run):
    result = run("ops", "sin", "--check", "reverse,forward")
    assert result.exit_code == 0, result.output
    assert "sin" in result.stdout and "reverse" in result.stdout
    assert "0 failed" in result.stdout


def test_the_json_report_follows_schema_v1(run_json):
    result, doc = run_json("ops", "sin", "--check", "reverse,reference", "--dtype", "float64")
    assert result.exit_code == 0
    assert_schema_v1(doc)
    assert {r["check"] for r in doc["results"]} == {"reverse", "reference"}
    assert doc["exit_code"] == 0 and doc["summary"]["passed"] == doc["summary"]["total"] > 0


def test_a_wrong_formula_exits_1_and_the_json_says_why(run_json):
    result, doc = run_json("ops", *CLI_TEST_OPS, "--check", "reverse")
    assert result.exit_code == 1
    assert_schema_v1(doc)
    failed = [r for r in doc["results"] if r["status"] == "failed"]
    assert {r["op"] for r in failed} == {"cli_doubled_sin"}
    assert all("2 times numerical" in r["diagnosis"] for r in failed)
    assert failed[0]["failures"][0]["out_idx"] == 0 and failed[0]["failures"][0]["in_idx"] == 0
    assert doc["exit_code"] == 1


def test_junit_xml_has_one_testcase_per_op_sample_and_check(run_json, tmp_path):
    path = tmp_path / "report.xml"
    _, doc = run_json("ops", *CLI_TEST_OPS, "--check", "reverse,forward",
                           "--junit-xml", path)
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    suite = root.find("testsuite")
    cases = suite.findall("testcase")
    assert len(cases) == len(doc["results"]) == int(suite.get("tests"))
    names = {(c.get("classname"), c.get("name")) for c in cases}
    assert len(names) == len(cases)
    assert ("adcheck.ops.cli_doubled_sin", "float64[1] reverse") in names
    failures = [c for c in cases if c.find("failure") is not None]
    assert len(failures) == int(suite.get("failures")) == doc["summary"]["failed"] == 2
    assert "2 times numerical" in failures[0].find("failure").text
    skipped = [c for c in cases if c.find("skipped") is not None]
    assert len(skipped) == int(suite.get("skipped")) == doc["summary"]["skipped"]


def _without_timing(doc):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in doc["results"]]


def test_jobs_2_gives_the_same_results_as_jobs_1(run_json):
    args = ("ops", "sin", "cli_doubled_sin", "cli_square", "--plugin", WRONG_OPS,
            "--check", "reverse,fast",
            "--dtype", "float64", "--seed", "5")
    serial, one = run_json(*args, "--jobs", "1")
    parallel, two = run_json(*args, "--jobs", "2")
    assert serial.exit_code == parallel.exit_code == 1
    assert _without_timing(one) == _without_timing(two)
    assert len(one["results"]) > 10


def test_the_seed_changes_the_probes_and_nothing_else(run_json):
    _, a = run_json("ops", "sin", "--check", "fast", "--dtype", "float64", "--seed", "1")
    _, b = run_json("ops", "sin", "--check", "fast", "--dtype", "float64", "--seed", "2")
    assert [r["seed"] for r in a["results"]] != [r["seed"] for r in b["results"]]
    assert [r["status"] for r in a["results"]] == [r["status"] for r in b["results"]]


def test_results_go_to_stdout_and_warnings_to_stderr(run):
    # fixed tolerances on float32 warn (precise checks judge float32 without warning)
    result = run("ops", "sin", "--check", "reverse", "--dtype", "float32", "--format", "json",
                 "--torch-tolerances")
    assert result.stdout.lstrip().startswith("{")
    assert "warning:" in result.stderr and "warning:" not in result.stdout


def test_quiet_prints_only_failures_and_totals(run):
    result = run("ops", *CLI_TEST_OPS, "--check", "reverse", "-q")
    lines = result.stdout.strip().splitlines()
    assert result.exit_code == 1
    assert lines[-1].startswith("2 passed, 2 failed")
    assert all(line.startswith("FAIL") for line in lines[:-1])


def test_torch_tolerances_use_the_fixed_atol_rtol(run_json):
    _, doc = run_json("ops", "cli_doubled_sin", "--plugin", WRONG_OPS, "--check", "reverse",
                      "--torch-tolerances")
    failure = doc["results"][0]["failures"][0]
    assert doc["settings"]["precise"] is False
    # atol + rtol * |numerical| with torch's float64 defaults 1e-5 and 1e-3
    assert 1e-5 <= failure["tolerance"] <= 1e-5 + 1e-3 * 1.0


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")
def test_engine_torch_checks_torch_formulas_and_names_the_ops_it_cannot(run):
    result = run("ops", "sin", "cli_square", "--plugin", WRONG_OPS, "--engine", "torch",
                 "--check", "reverse", "--dtype", "float64", "--format", "json")
    doc = json.loads(result.stdout)
    assert result.exit_code == 0
    assert doc["settings"]["engine"] == "torch"
    assert {r["op"] for r in doc["results"]} == {"sin"}
    assert "name no torch op" in result.stderr and "cli_square" in result.stderr
