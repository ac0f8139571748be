"""--baseline: CI fails only on new failures and reports the fixed ones."""
import json

from cli_paths import CLI_TEST_OPS

from adcheck.runner.baseline import compare
from adcheck.runner.results import CheckResult


def _result(op, status, sample=0):
    return CheckResult(op, "float64", sample, "reverse", status)


def test_compare_splits_failures_into_new_and_accepted_and_finds_the_fixed():
    results = [_result("a", "failed"), _result("b", "failed"), _result("c", "passed"),
               _result("d", "error"), _result("e", "skipped")]
    accepted = {"a|float64|0|reverse", "c|float64|0|reverse", "e|float64|0|reverse",
                "gone|float64|0|reverse"}
    diff = compare(results, accepted, "b.json")
    assert diff.new == ["b|float64|0|reverse", "d|float64|0|reverse"]
    assert diff.accepted == ["a|float64|0|reverse"]
    assert diff.fixed == ["c|float64|0|reverse"]   # skipped and absent keys are not "fixed"


def _sweep(run_json, *extra):
    return run_json("ops", *CLI_TEST_OPS, "--check", "reverse", *extra)


def test_a_written_baseline_turns_the_same_failures_into_exit_0(run, run_json, tmp_path):
    path = tmp_path / "baseline.json"
    first = run("ops", *CLI_TEST_OPS, "--check", "reverse",
                "--write-baseline", path)
    assert first.exit_code == 1
    assert "wrote 2 accepted failures" in first.stderr
    written = json.loads(path.read_text())
    assert written["schema"] == "adcheck-baseline" and written["schema_version"] == 1
    assert [e["key"] for e in written["accepted"]] == [
        "cli_doubled_sin|float64|0|reverse", "cli_doubled_sin|float64|1|reverse"]
    result, doc = _sweep(run_json, "--baseline", path)
    assert result.exit_code == 0
    assert doc["baseline"]["new"] == [] and len(doc["baseline"]["accepted"]) == 2
    assert doc["summary"]["failed"] == 2     # still reported, only accepted


def test_a_failure_missing_from_the_baseline_is_new_and_fails(run_json, tmp_path):
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps({"schema": "adcheck-baseline", "schema_version": 1, "accepted": [
        {"key": "cli_doubled_sin|float64|0|reverse"}]}))
    result, doc = _sweep(run_json, "--baseline", path)
    assert result.exit_code == 1
    assert doc["baseline"]["new"] == ["cli_doubled_sin|float64|1|reverse"]


def test_an_accepted_failure_that_now_passes_is_reported_fixed(run, tmp_path):
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps({"schema": "adcheck-baseline", "schema_version": 1, "accepted": [
        {"key": "cli_square|float64|0|reverse"}, {"key": "cli_doubled_sin|float64|0|reverse"},
        {"key": "cli_doubled_sin|float64|1|reverse"}]}))
    result = run("ops", *CLI_TEST_OPS, "--check", "reverse",
                 "--baseline", path)
    assert result.exit_code == 0
    assert "0 new, 2 accepted, 1 fixed" in result.stdout
    assert "fixed  cli_square|float64|0|reverse" in result.stdout


def test_the_baseline_command_writes_one_from_a_saved_json_report(run, run_json, tmp_path):
    _, doc = _sweep(run_json)
    report = tmp_path / "run.json"
    report.write_text(json.dumps(doc))
    out = tmp_path / "baseline.json"
    result = run("baseline", report, "-o", out)
    assert result.exit_code == 0
    keys = [e["key"] for e in json.loads(out.read_text())["accepted"]]
    assert keys == [r["key"] for r in doc["results"] if r["status"] == "failed"]


def test_the_baseline_command_refuses_a_file_that_is_not_a_report(run, tmp_path):
    path = tmp_path / "other.json"
    path.write_text('{"hello": 1}')
    result = run("baseline", path)
    assert result.exit_code == 2 and "not an adcheck JSON report" in result.stderr
