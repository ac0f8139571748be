"""An op that raises, returns NaN or hangs is an error for that op; Ctrl-C
writes the partial report and exits 130."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from cli_paths import CLI_TEST_OPS, FIXTURES, UNRULY_OPS

import adcheck.runner.runloop
from adcheck import runner

REPO = Path(__file__).resolve().parents[2]
FAULTY_OPS = str(FIXTURES / "faulty_ops.py")


def _by_op(doc):
    found = {}
    for r in doc["results"]:
        found.setdefault(r["op"], []).append(r)
    return found


def test_raising_nan_hanging_and_sampleless_ops_are_errors_and_the_sweep_goes_on(run_json):
    start = time.perf_counter()
    result, doc = run_json("ops", "--plugin", UNRULY_OPS, "--family", "cli_unruly",
                           "--check", "reverse", "--timeout", "5")
    # cli_slow sleeps 30 s: the sweep went on without waiting for it (5 s leave
    # the other ops time to finish on a loaded machine, which 0.5 s did not)
    assert time.perf_counter() - start < 30
    assert result.exit_code == 1
    ops = _by_op(doc)
    assert [r["status"] for r in ops["cli_raises"]] == ["error"]
    assert "RuntimeError: this op is broken" in ops["cli_raises"][0]["message"]
    assert [r["status"] for r in ops["cli_nan"]] == ["error"]
    assert "NaN" in ops["cli_nan"][0]["message"]
    assert [r["status"] for r in ops["cli_slow"]] == ["error"]
    assert "timed out after 5s" in ops["cli_slow"][0]["message"]
    assert [r["status"] for r in ops["cli_no_samples"]] == ["error"]
    assert "the sample recipe is broken" in ops["cli_no_samples"][0]["message"]
    assert [r["status"] for r in ops["cli_fine"]] == ["passed"]   # the op after them ran


def test_ctrl_c_in_a_serial_sweep_writes_the_partial_report_and_exits_130(run, monkeypatch):
    real = runner.runloop.RunLoop.dispatch
    calls = []

    def interrupted_on_second_task(self, worker, task):
        calls.append(task)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(self, worker, task)
    monkeypatch.setattr(runner.runloop.RunLoop, "dispatch", interrupted_on_second_task)
    result = run("ops", *CLI_TEST_OPS, "--check", "reverse", "--jobs", "1",
                 "--format", "json")
    assert result.exit_code == 130
    doc = json.loads(result.stdout)
    assert doc["interrupted"] is True and doc["exit_code"] == 130
    assert {r["op"] for r in doc["results"]} == {"cli_doubled_sin"}   # the first task only
    assert "partial" in result.stderr


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_sigint_to_a_parallel_sweep_terminates_the_workers_and_exits_130(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO), ADCHECK_FAULT_MARKER=str(tmp_path / "marker"))
    junit = tmp_path / "partial.xml"
    command = [sys.executable, "-c", "from adcheck.cli.main import main; main()", "ops", "--plugin",
               FAULTY_OPS, "fault_fine", "fault_hang_python", "--check", "reverse",
               "--jobs", "2", "--timeout", "60", "--format", "json", "--junit-xml", str(junit)]
    # A runner started in the background (bash's `cmd &`) ignores SIGINT and its
    # children inherit that; the sweep under test must see Ctrl-C as a user would.
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    # the hanging op writes its worker's pid when it starts: Ctrl-C then comes
    # mid-sweep, however slowly this machine started the command
    while not (tmp_path / "marker").exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the sweep never reached the hanging op"
        time.sleep(0.05)
    worker = int((tmp_path / "marker").read_text())
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    doc = json.loads(out)
    assert doc["interrupted"] is True
    assert "fault_hang_python" not in {r["op"] for r in doc["results"]}
    assert junit.exists() and "interrupted" in junit.read_text()
    gone = time.monotonic() + 10     # an orphaned worker is reaped by init, not at once
    while _alive(worker) and time.monotonic() < gone:
        time.sleep(0.05)
    assert not _alive(worker), "the hanging op's worker outlived the sweep"


def test_fail_fast_stops_after_the_first_failing_op(run_json):
    # one job: which op finishes first is then the task order, not a race
    result, doc = run_json("ops", *CLI_TEST_OPS, "--jobs", "1",
                           "--check", "reverse", "--dtype", "float64", "--fail-fast")
    assert result.exit_code == 1
    assert doc["stopped_early"] is True
    assert {r["op"] for r in doc["results"]} == {"cli_doubled_sin"}
