"""A run in which nothing was checked is not a pass (issue 28, item 2).

Each target below has every check skipped for a reason the default output
must print; the exit status is then 3, with ``--allow-empty`` 0. The Python
API on the same inputs raises or returns a report that did not pass, so the
command line and ``gradcheck.check`` / ``assert_gradients`` agree.
"""
from pathlib import Path

import pytest

FILE = str(Path(__file__).parent / "fixtures" / "nothing_checked.py")

#: (function, engine, words the printed reason must contain)
CASES = [
    ("nan_output", "torch", "NaN or inf"),
    ("nan_output", "refengine", "NaN or inf"),
    ("python_int", "torch", "no output requires grad"),
    ("python_float", "refengine", "no output requires grad"),
    ("constant", "torch", "no output requires grad"),
    ("constant", "refengine", "no output requires grad"),
]


@pytest.mark.parametrize("name,engine,reason", CASES,
                         ids=[f"{n}-{e}" for n, e, _ in CASES])
def test_nothing_checked_exits_3_and_says_why_in_the_default_output(run, name, engine,
                                                                    reason):
    if engine == "torch":
        pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
    result = run("check", f"{FILE}:{name}", "--engine", engine)
    assert result.exit_code == 3, result.stdout
    lines = [line for line in result.stdout.splitlines() if line.startswith("NOT CHECKED")]
    assert len(lines) == 1 and name in lines[0] and reason in lines[0]
    assert "pass --allow-empty to accept" in result.stdout


def test_allow_empty_exits_0_and_still_lists_the_target(run):
    result = run("check", f"{FILE}:python_int", "--engine", "refengine", "-q",
                 "--allow-empty")
    assert result.exit_code == 0
    assert "NOT CHECKED python_int" in result.stdout
    assert "accepted by --allow-empty" in result.stdout


def test_the_json_report_records_the_status_and_the_reasons(run_json):
    result, doc = run_json("check", f"{FILE}:python_float", "--engine", "refengine")
    assert result.exit_code == doc["exit_code"] == 3
    assert list(doc["unjudged"]) == ["python_float"]
    assert "no output requires grad" in doc["unjudged"]["python_float"][0]


def test_a_judged_function_of_the_same_file_still_exits_0(run):
    result = run("check", f"{FILE}:square", "--engine", "refengine")
    assert result.exit_code == 0
    assert "NOT CHECKED" not in result.stdout


@pytest.mark.parametrize("engine", ["refengine", "torch"])
@pytest.mark.parametrize("name", ["nan_output", "python_int", "python_float", "constant"])
def test_the_api_does_not_pass_what_the_command_line_does_not(name, engine):
    """``gradcheck.check`` raises (nothing to check) or returns a report that did
    not pass; ``assert_gradients`` raises either way."""
    import sys

    import numpy as np

    from adcheck.gradcheck import check
    from pytest_adcheck import assert_gradients
    sys.path.insert(0, str(Path(FILE).parent))
    try:
        import nothing_checked as module
    finally:
        sys.path.pop(0)
    if engine == "torch":
        torch = pytest.importorskip("torch", reason="the torch cases need PyTorch")
        x = torch.tensor(np.linspace(-1, 1, 3), requires_grad=True)
    else:
        import adcheck.refengine as E
        x = E.tensor(np.linspace(-1, 1, 3), requires_grad=True)
    func = getattr(module, name)
    try:
        report = check(func, (x,), precise=True)
    except ValueError as exc:
        assert "nothing to check" in str(exc)
    else:
        assert not report.passed
    with pytest.raises((AssertionError, ValueError)):
        assert_gradients(func, (x,))


def test_an_op_sweep_with_an_op_of_nothing_judged_exits_3(run):
    """``adcheck ops``: both plugin ops have no mpmath reference, so a sweep of the
    reference check judges neither (the pytest marker fails its session alike:
    tests/pytest_plugin/test_registry.py)."""
    from cli_paths import CLI_TEST_OPS
    result = run("ops", *CLI_TEST_OPS, "--check", "reference", "--dtype", "float64", "-j", "1")
    assert result.exit_code == 3
    assert "NOT CHECKED cli_doubled_sin" in result.stdout
    assert "NOT CHECKED cli_square" in result.stdout
    assert "2 of 2 checked ops had nothing judged" in result.stdout


def _report(*statuses_by_op, **settings):
    from adcheck.runner.results import CheckResult, RunReport
    results = [CheckResult(op, "float64", 0, check, status, f"{status} because")
               for op, pairs in statuses_by_op for check, status in pairs]
    return RunReport("ops", settings, results)


def test_a_failure_outranks_nothing_judged_and_allow_empty_accepts_only_the_latter():
    skipped_op = ("b", [("reverse", "skipped"), ("forward", "skipped")])
    assert _report(("a", [("reverse", "passed")]), skipped_op).exit_code() == 3
    assert _report(("a", [("reverse", "failed")]), skipped_op).exit_code() == 1
    assert _report(("a", [("reverse", "passed")]), skipped_op,
                   allow_empty=True).exit_code() == 0
    assert _report(("a", [("reverse", "failed")]), skipped_op,
                   allow_empty=True).exit_code() == 1
    # an op judged in one check, or accepted as a known failure, is judged
    assert _report(("a", [("reverse", "known-failure"), ("forward", "skipped")])
                   ).exit_code() == 0
    # an op whose every result is an error already fails, and is not "unjudged"
    errored = _report(("a", [("setup", "error")]))
    assert errored.exit_code() == 1 and errored.unjudged() == {}


def test_the_reasons_are_grouped_by_message():
    report = _report(("b", [("reverse", "skipped"), ("forward", "skipped")]))
    assert report.unjudged() == {"b": ["reverse, forward: skipped because"]}


def test_an_op_that_declares_no_derivative_is_listed_but_fails_only_an_empty_run(run):
    """``eq`` declares no differentiable mode: beside a judged op it is listed and
    the run passes; alone, the run judged nothing and exits 3."""
    both = run("ops", "eq", "sin", "--dtype", "float64", "--check", "reverse", "-j", "1")
    assert both.exit_code == 0
    assert "not checked, declaring no derivative for these checks: eq" in both.stdout
    alone = run("ops", "eq", "--dtype", "float64", "--check", "reverse", "-j", "1")
    assert alone.exit_code == 3
    assert "1 of 1 checked ops had nothing judged: exit status 3" in alone.stdout
