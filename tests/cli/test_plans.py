"""The default plan fits the timeout; --jacobian chooses; a timeout says where
(issue 28, item 3).

The row-wise layer norm of the issue, right and with a wrong reduction, at a
size whose Jacobian is ``large`` (40x30: 1.4 million entries) so that
``auto`` weighs its plans, as it does at 100x100 to 1000x100
(bench/layernorm_plans.py runs those sizes).
"""
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="the layer norms are torch Functions")

# the files docs/cli.md runs
EXAMPLES = Path(__file__).parents[2] / "examples"
LAYERNORM = str(EXAMPLES / "layernorm.py")
SLOW = str(EXAMPLES / "slow.py")


def _layernorms():
    import importlib.util
    spec = importlib.util.spec_from_file_location("issue28_layernorm", LAYERNORM)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.RowLayerNorm, module.RowLayerNormBuggy


def _x(rows=40, cols=30):
    return torch.randn(rows, cols, dtype=torch.float64, requires_grad=True,
                       generator=torch.Generator().manual_seed(3))


@pytest.mark.parametrize("time_limit,plan", [(None, "compressed"), (1e-3, "probed")])
def test_a_wrong_reduction_fails_where_the_right_one_passes_whatever_the_plan(time_limit,
                                                                             plan):
    from adcheck.gradcheck import check
    right, wrong = _layernorms()
    good = check(right.apply, (_x(),), precise=True, seed=0, time_limit=time_limit)
    bad = check(wrong.apply, (_x(),), precise=True, seed=0, time_limit=time_limit)
    assert good.plan == plan and good.passed
    # the wrong formula's pattern couples every row: not worth compressing
    assert bad.plan == (plan if plan == "probed" else "dense") and not bad.passed
    assert bad.failures[0].check == "reverse"
    if plan == "probed":   # the odds are stated, and the directions are auto's 8
        assert set(good.escape) >= {"reverse", "relative_error"}


def test_a_limit_the_estimate_fits_in_keeps_every_entry():
    from adcheck.gradcheck import check
    right, _ = _layernorms()
    assert check(right.apply, (_x(),), precise=True, seed=0, time_limit=1e6).plan == \
        "compressed"


def test_the_runner_passes_its_plan_and_deadline_to_every_check_a_call_can_override():
    import time

    from adcheck.gradcheck.core.options import Options, caller_defaults
    with caller_defaults(jacobian="probed", deadline=time.monotonic() + 100):
        given = Options.from_keywords()
        assert given.jacobian == "probed" and 99 < given.time_limit <= 100
        assert Options.from_keywords(jacobian="dense").jacobian == "dense"
        # an mpmath reference gives whole Jacobians: it keeps "auto"
        assert Options.from_keywords(reference=lambda *a: a).jacobian == "auto"
    assert Options.from_keywords().jacobian == "auto"
    assert Options.from_keywords().time_limit is None


def test_jacobian_choices_are_the_apis():
    from adcheck.cli.options import JACOBIAN_CHOICES
    from adcheck.gradcheck.core.options import JACOBIAN_KINDS
    assert JACOBIAN_CHOICES == JACOBIAN_KINDS


@pytest.mark.parametrize("name,status", [("RowLayerNorm", 0), ("RowLayerNormBuggy", 1)])
def test_jacobian_probed_on_the_command_line(run_json, name, status):
    result, doc = run_json("check", f"{LAYERNORM}:{name}", "--inputs", "randn(40, 30)",
                           "--check", "reverse", "--jacobian", "probed")
    assert result.exit_code == status
    (reverse,) = doc["results"]
    assert reverse["plan"] == "probed" and 0 <= reverse["escape"]["reverse"] <= 1
    assert doc["settings"]["jacobian"] == "probed"


def test_the_table_states_the_probed_plan_and_its_odds(run):
    result = run("check", f"{LAYERNORM}:RowLayerNorm", "--inputs", "randn(40, 30)",
                 "--check", "reverse", "--jacobian", "probed")
    assert result.exit_code == 0
    line = next(line for line in result.stdout.splitlines() if line.startswith("probed"))
    assert "--jacobian dense builds every entry" in line
    assert "escapes with probability at most RowLayerNorm reverse" in line


def test_a_timeout_names_the_check_the_plan_the_stage_and_the_users_line(run_json):
    result, doc = run_json("check", f"{SLOW}:slow", "--inputs", "randn(20, 20)",
                           "--timeout", "1", "--jacobian", "dense", "--check", "reverse")
    assert result.exit_code == 1
    (error,) = doc["results"]
    message = error["message"]
    assert message.startswith("timed out after 1s in the reverse check (Jacobian plan dense)")
    assert "while building the expected Jacobian by finite differences" in message
    assert f"in your code at {SLOW}:" in message
    assert "try --jacobian probed" in message


def test_the_right_layer_norm_passes_every_default_check_as_torch_agrees():
    """The example a newcomer runs first must be right to the second order: its
    backward recomputes rstd from x, so a double backward sees rstd's
    dependence on x (torch's own gradgradcheck is the independent judge)."""
    from adcheck.gradcheck import check
    right, _ = _layernorms()
    x = _x(4, 5)
    assert torch.autograd.gradgradcheck(right.apply, (x,))
    assert check(right.apply, (x,), precise=True, seed=0, order=2).passed


def test_a_probed_pass_at_odds_of_escape_of_a_half_or_more_says_it_judged_little():
    # a harvest's whole-model row read "ok" beside "escapes with probability at most
    # 1.0e+00": a pass that says nothing of single entries is said so
    from types import SimpleNamespace

    from adcheck.cli.formats.table import probed_lines

    def report(odds, harvest=False, status="passed"):
        row = SimpleNamespace(plan="probed", op="Model", check="reverse", status=status,
                              escape={"reverse": odds, "relative_error": 0.1})
        return SimpleNamespace(results=[row], settings={"jacobian": "auto", "harvest": harvest})
    (low,) = probed_lines(report(0.03))
    assert "saying little" not in low.plain
    (high,) = probed_lines(report(1.0))
    assert "Model reverse passed saying little of single entries" in high.plain
    assert "--jacobian dense, or check the Functions" in high.plain
    (harvested,) = probed_lines(report(0.7, harvest=True))
    assert "its Functions are judged one by one above" in harvested.plain
    (failed,) = probed_lines(report(1.0, status="failed"))
    assert "saying little" not in failed.plain


def test_a_pass_whose_explored_points_mostly_timed_out_is_said_so():
    # jaxopt's l1-ball projection: "explored 2 points ... 2 timed out" was in the JSON
    # message alone; the terminal showed "ok"
    from types import SimpleNamespace

    from adcheck.cli.formats.table import explore_gap_lines
    from adcheck.gradcheck.explore.tally import Tally

    def report(tried, timeouts, status="passed"):
        text = Tally(tried=tried, timeouts=timeouts).text()     # the words the runs write
        row = SimpleNamespace(op="l1ball", check="reverse", status=status, message=text)
        return SimpleNamespace(results=[row])
    (line,) = explore_gap_lines(report(2, 2))
    assert "judged nothing there: l1ball reverse (2 of 2)" in line.plain
    assert explore_gap_lines(report(5, 1)) == []
    assert explore_gap_lines(report(2, 2, status="failed")) == []
    assert explore_gap_lines(report(0, 0)) == []
