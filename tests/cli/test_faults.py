"""Fault injection: third-party ops that raise, return NaN or inf, hang in Python
or in C, exit, crash, are killed, exhaust their memory, mutate their inputs.

Whatever an op does, adcheck never says "pass" for it, reports it as that
op's error naming the cause, keeps every other result, ends with the status
the reports record, and writes every report whole (JSON, JUnit, HTML), for
``--jobs 1`` and ``--jobs 2``. The ops are tests/cli/fixtures/faulty_ops.py.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
from cli_paths import FIXTURES

REPO = Path(__file__).resolve().parents[2]
FAULTY = str(FIXTURES / "faulty_ops.py")
MAIN_ONLY = str(FIXTURES / "main_process_only.py")

#: seconds an op may run: the hanging ones sleep 60, and every other op must
#: finish within it on a loaded machine too (1 s was not enough there)
TIMEOUT = 5
#: op -> (status, words its message must hold)
VERDICTS = {
    "fault_fine": ("passed", []),
    "fault_raises": ("error", ["RuntimeError: this op is broken"]),
    "fault_nan_output": ("error", ["NaN"]),
    "fault_hang_python": ("error", [f"timed out after {TIMEOUT}s"]),
    "fault_swallow_timeout": ("error", [f"timed out after {TIMEOUT}s",
                                         "worker process was killed"]),
    "fault_hang_c": ("error", [f"timed out after {TIMEOUT}s", "worker process was killed"]),
    "fault_sys_exit": ("error", ["sys.exit(0)"]),
    "fault_os_exit": ("error", ["exited with status 0"]),
    "fault_segfault": ("error", ["SIGSEGV", "segmentation fault"]),
    "fault_killed": ("error", ["killed by SIGKILL"]),
    "fault_exhausts_memory": ("error", ["MemoryError"]),
    "fault_fine_after": ("passed", []),
    # gradcheck names these faults (issue 14, "Misreported faults"): never "not reentrant"
    # an inf output leaves nothing to judge (refengine's 0 * inf in the undefined-grad
    # check is its consequence, as on torch): a skip that names it (issue 28)
    "fault_inf_output": ("skipped", ["cannot judge this sample",
                                     "output is NaN or inf at the given inputs",
                                     "output 0 is inf at [0]"]),
    "fault_nan_backward": ("failed", ["has NaN or inf entries", "the vjp returns NaN",
                                      "where finite differences give"]),
    "fault_mutates_input": ("failed", ["changed input 0 in place",
                                       "clone the input before modifying it"]),
    "fault_nondeterministic": ("failed", ["nondeterministic forward",
                                          "evaluated twice at the same inputs"]),
}


def _junit(path) -> ET.Element:
    return ET.parse(path).getroot()


def _html_text(path) -> str:
    text = Path(path).read_text(encoding="utf-8")
    parser = HTMLParser()
    parser.feed(text)
    parser.close()
    assert text.rstrip().endswith("</html>")
    return text


def _assert_reports_agree(doc, junit_path, html_path, status: int) -> None:
    """The three reports parse, and each records the run's real exit status."""
    assert doc["exit_code"] == status
    suite = _junit(junit_path).find("testsuite")
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["exit_code"] == str(status)
    assert len(suite.findall("testcase")) == len(doc["results"])
    assert f"exit status {status}" in _html_text(html_path)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_each_fault_is_its_ops_error_and_the_other_results_are_kept(run, tmp_path, jobs):
    junit, html = tmp_path / "run.xml", tmp_path / "run.html"
    result = run("ops", "--plugin", FAULTY, "--family", "fault", "--check", "reverse",
                 "--timeout", TIMEOUT, "--jobs", jobs, "--format", "json", "--junit-xml", junit,
                 "--html", html)
    doc = json.loads(result.stdout)
    by_op = {}
    for r in doc["results"]:
        by_op.setdefault(r["op"], []).append(r)
    for op, (status, words) in VERDICTS.items():
        assert [r["status"] for r in by_op[op]] == [status], (op, by_op[op])
        for word in words:
            assert word in by_op[op][0]["message"], (op, by_op[op][0]["message"])
        assert "reentrant" not in by_op[op][0]["message"], (op, by_op[op][0]["message"])
    assert result.exit_code == 1
    _assert_reports_agree(doc, junit, html, 1)


@pytest.mark.parametrize("op, words", [
    ("fault_mutates_input", ["an input that requires grad was modified in place",
                             "changed input 0 in place"]),
    ("fault_nondeterministic", ["the function is nondeterministic", "nondeterministic forward"]),
])
def test_an_op_that_mutates_its_input_or_is_nondeterministic_fails_saying_so(run_json, op,
                                                                             words):
    # the op mutates under no_grad (invisible to autograd), or adds fresh noise
    # on every call (invisible to one batched evaluation): both passed every check
    _, doc = run_json("ops", op, "--plugin", FAULTY, "--check", "reverse,fast",
                      "--dtype", "float64")
    assert [r["status"] for r in doc["results"]] == ["failed", "failed"], doc["results"]
    for r in doc["results"]:
        assert all(word in r["message"] for word in words), r["message"]


def test_crashes_are_reported_at_once_not_after_the_timeout(run_json):
    # the default --timeout is 300 s: waiting for it would take minutes
    start = time.monotonic()
    result, doc = run_json("ops", "fault_os_exit", "fault_segfault", "fault_killed",
                           "fault_fine", "--plugin", FAULTY, "--check", "reverse",
                           "--jobs", "1")
    assert time.monotonic() - start < 120
    assert result.exit_code == 1
    assert [r["status"] for r in doc["results"]] == ["passed", "error", "error", "error"]


@pytest.mark.parametrize("name, words", [
    ("calls_os_exit", ["exited with status 0"]),
    ("calls_sys_exit", ["sys.exit(0)"]),
    ("segfaults", ["SIGSEGV"]),
])
def test_a_user_function_that_exits_or_crashes_fails_the_check(run_json, name, words):
    result, doc = run_json("check", f"{FAULTY}:{name}", "--inputs", "randn(2)",
                           "--check", "reverse")
    assert result.exit_code == 1 and doc["exit_code"] == 1
    assert doc["summary"]["passed"] == 0 and doc["summary"]["error"] >= 1
    messages = " ".join(r["message"] for r in doc["results"])
    assert all(word in messages for word in words), messages


def test_a_plugin_that_fails_only_in_workers_is_one_error_line_and_exit_2(run, tmp_path):
    junit = tmp_path / "run.xml"
    result = run("ops", "sin", "main_only_sin", "--plugin", MAIN_ONLY, "--check", "reverse",
                 "--dtype", "float64", "--jobs", "2", "--format", "json", "--junit-xml", junit)
    assert result.exit_code == 2
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("Error: a worker process cannot load")
    assert "works in the main process only" in errors[0]
    doc = json.loads(result.stdout)
    assert doc["exit_code"] == 2 and "cannot load" in doc["error"]
    assert {p.get("name"): p.get("value") for p in _junit(junit).iter("property")
            }["exit_code"] == "2"


# --- the command as a process: signals and broken outputs ----------------------

def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _adcheck(*args, marker=None, **popen):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    if marker is not None:
        env["ADCHECK_FAULT_MARKER"] = str(marker)
    # a process started in the background ignores SIGINT, and its children inherit
    # that; the command under test must see signals as a user's command would
    return subprocess.Popen([sys.executable, "-c", "from adcheck.cli.main import main; main()",
                             *map(str, args)], cwd=REPO, env=env, text=True,
                            preexec_fn=_default_sigint, **popen)


def _wait_for(marker: Path, process) -> None:
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the sweep never reached the hanging op"
        time.sleep(0.05)


@pytest.mark.parametrize("signal_name, status, jobs, group", [
    ("SIGTERM", 143, "1", False),
    ("SIGHUP", 129, "2", True),     # a closed terminal: the whole process group hears it
    ("SIGINT", 130, "1", False),
])
def test_a_stop_signal_writes_every_partial_report(tmp_path, signal_name, status, jobs,
                                                   group):
    marker, junit, html = tmp_path / "marker", tmp_path / "run.xml", tmp_path / "run.html"
    process = _adcheck("ops", "fault_fine", "fault_hang_python", "fault_fine_after",
                       "--plugin", FAULTY, "--check", "reverse", "--timeout", "60",
                       "--jobs", jobs, "--format", "json", "--junit-xml", junit,
                       "--html", html, marker=marker, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, start_new_session=True)
    _wait_for(marker, process)
    if jobs == "2":
        # the other worker checks fault_fine while the hang starts; its result is
        # what the assertion below is about, so give it time to arrive (it takes
        # about 0.1 s; the report has no earlier sign of it to wait for)
        time.sleep(3)
    number = getattr(signal, signal_name)
    for _ in range(3 if signal_name == "SIGINT" else 1):    # a second Ctrl-C changes nothing
        os.killpg(process.pid, number) if group else process.send_signal(number)
    out, err = process.communicate(timeout=120)
    assert process.returncode == status, err
    assert "Traceback" not in err and "BrokenPipe" not in err
    doc = json.loads(out)
    assert doc["interrupted"] is True and doc["signal"] == signal_name
    done = [r["op"] for r in doc["results"]]
    # with two workers the op queued after the hanging one may finish on the other
    # worker before the signal arrives; a finished result is kept, the hanging one never
    expected = [["fault_fine"]] + ([["fault_fine", "fault_fine_after"]] if jobs == "2" else [])
    assert done in expected, done
    _assert_reports_agree(doc, junit, html, status)
    assert "Interrupted" in html.read_text(encoding="utf-8")


@pytest.mark.parametrize("stdout", ["/dev/full", "closed pipe"])
def test_a_stdout_that_cannot_be_written_is_one_line_and_exit_2(tmp_path, stdout):
    junit = tmp_path / "run.xml"
    args = ("ops", "sin", "--check", "reverse", "--dtype", "float64", "--format", "json",
            "--junit-xml", junit)
    if stdout == "/dev/full":
        with open("/dev/full", "w") as full:
            process = _adcheck(*args, stdout=full, stderr=subprocess.PIPE)
            err = process.communicate(timeout=120)[1]
    else:
        process = _adcheck(*args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        process.stdout.close()
        err = process.stderr.read()
        process.wait(timeout=120)
    assert process.returncode == 2
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: cannot write the report to "
                                                   "standard output"), err
    assert {p.get("name"): p.get("value") for p in _junit(junit).iter("property")
            }["exit_code"] == "2"


def test_two_runs_writing_one_junit_file_leave_a_whole_one(tmp_path):
    junit = tmp_path / "shared.xml"
    runs = [_adcheck("ops", "sin", "exp", "--check", "reverse", "--jobs", "1", "-q",
                     "--junit-xml", junit, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL) for _ in range(2)]
    assert [p.wait(timeout=120) for p in runs] == [0, 0]
    suite = _junit(junit).find("testsuite")
    assert len(suite.findall("testcase")) == int(suite.get("tests")) > 0
    assert [p.name for p in tmp_path.iterdir()] == ["shared.xml"]   # no temporary file left
