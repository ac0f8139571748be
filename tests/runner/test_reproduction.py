"""runner.rebuild and runner.rebuild_target give back the check a run reported.

The oracle is the run itself: the task runner's result for a (op, dtype,
sample, check) and the rebuilt check must agree on the seed, the verdict and
the numbers of the first failure, for any base seed and engine; and the
snippet ``reproducer`` prints must run and give the same report.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from adcheck import runner
from adcheck.runner.checks import Policy
from adcheck.runner.errors import RunnerError
from adcheck.runner.registry import OPINFO
from adcheck.runner.reproduction import reproducer
from adcheck.runner.run import run_tasks
from adcheck.runner.selection import plan, select
from adcheck.runner.tasks import Settings, TargetTask

FIXTURES = Path(__file__).resolve().parents[1] / "cli" / "fixtures"
WRONG_OPS = str(FIXTURES / "wrong_ops.py")
USER_MODULES = str(FIXTURES / "user_modules.py")


@pytest.fixture(autouse=True)
def _plugins_do_not_outlive_their_test(restored_registry):
    """The plugin ops these tests load into the process-wide registry must not
    be seen by a later test in the same process (``adcheck list`` would list them)."""
    yield


def _run(patterns, checks, seed=0, plugins=()):
    OPINFO.load_plugins(plugins)
    settings = Settings(checks, Policy(True, "refengine", seed), plugins=plugins)
    outcome = run_tasks(plan(select(OPINFO, patterns).infos, ["float64"], settings),
                        in_process=True)
    return outcome.results


@pytest.mark.parametrize("seed", [0, 5])
def test_a_rebuilt_failure_is_the_failure_the_run_reported(seed):
    results = _run(("cli_doubled_sin",), ("reverse",), seed, (WRONG_OPS,))
    for result in results:
        rebuilt = runner.rebuild(result.op, result.dtype, result.sample, result.check,
                                 seed=seed, plugins=[WRONG_OPS])
        assert rebuilt.keywords["seed"] == result.seed
        report = rebuilt.check()
        assert result.status == "failed" and not report.passed
        assert report.message().splitlines()[0] == result.message


def test_a_rebuilt_check_unpacks_into_what_gradcheck_takes():
    from adcheck import gradcheck
    (result,) = [r for r in _run(("sin",), ("forward",)) if r.sample == 2]
    func, inputs, keywords = runner.rebuild("sin", "float64", 2, "forward")
    report = gradcheck.check(func, inputs, **keywords)
    assert report.passed and result.status == "passed"
    assert keywords["check_forward_ad"] and not keywords["check_backward_ad"]
    assert report.seed == result.seed


def test_the_printed_snippet_runs_and_reproduces_the_failure():
    (result, *_) = _run(("cli_doubled_sin",), ("reverse",), 3, (WRONG_OPS,))
    code = reproducer(result, {"engine": "refengine", "seed": 3, "precise": True,
                               "plugins": [WRONG_OPS]})
    assert "seed=3" in code and "engine=" not in code and "precise=" not in code
    namespace: dict = {}
    exec(code.replace("print(report.message())", ""), namespace)  # noqa: S102 - the subject
    assert namespace["report"].message().splitlines()[0] == result.message


def test_the_snippet_names_every_setting_that_is_not_the_default():
    (result,) = [r for r in _run(("sin",), ("reverse",)) if r.sample == 0]
    code = reproducer(result, {"engine": "torch", "seed": 0, "precise": False, "plugins": []})
    assert "engine='torch'" in code and "precise=False" in code and "seed=" not in code
    assert reproducer(result.__class__("sin", "float64", None, "setup", "error"), {}) is None


def test_rebuild_target_is_the_run_of_adcheck_check():
    settings = Settings(("reverse",), Policy(True, "refengine", 2))
    spec = "randn(5, 3)"
    task = TargetTask(1, f"{USER_MODULES}:WrongLinear", spec, "refengine", settings)
    (result,) = run_tasks([task], in_process=True).results
    rebuilt = runner.rebuild_target(f"{USER_MODULES}:WrongLinear", spec, "reverse", index=1,
                                    seed=2)
    report = rebuilt.check()
    assert result.status == "failed" and report.message().splitlines()[0] == result.message
    assert rebuilt.keywords["input_names"] == ("x", "weight", "bias")
    code = reproducer(result, {"engine": "refengine", "seed": 2, "kind": "refengine Module",
                               "target": f"{USER_MODULES}:WrongLinear", "inputs": ["", spec]})
    namespace: dict = {}
    exec(code.replace("print(report.message())", ""), namespace)  # noqa: S102 - the subject
    assert namespace["report"].message().splitlines()[0] == result.message


@pytest.mark.parametrize("call, message", [
    (lambda: runner.rebuild("sinn", "float64", 0), "no OpInfo named 'sinn'"),
    (lambda: runner.rebuild("sin", "int64", 0), "sin has no dtype 'int64'"),
    (lambda: runner.rebuild("sin", "float64", 99), "pick --sample in that range"),
    (lambda: runner.rebuild("sin", "float64", 0, "sideways"), "unknown check 'sideways'"),
    (lambda: runner.rebuild("sin", "float64", 0, "reverse", registry="elsewhere"),
     "unknown registry 'elsewhere'; choose from opinfo, torch"),
    (lambda: runner.rebuild("cli_square", "float64", 0, "forward", plugins=[WRONG_OPS]),
     "does not declare support for forward mode"),
])
def test_what_cannot_be_rebuilt_says_why(call, message):
    with pytest.raises(RunnerError, match=message):
        call()
