"""The quick pass by default (issue 30, item 6): ``check()``, ``assert_gradients``
and the pytest marker run it unless ``explore=False``; ``gradcheck()`` and
``gradgradcheck()`` keep PyTorch's meaning; with torch's tolerances
(``precise=False``, ``--torch-tolerances``) it runs too: each explored point is
judged precisely, and fails only where it is outside the tolerances asked for
too."""
from __future__ import annotations

import json

import mpmath
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from click.testing import CliRunner  # noqa: E402

from adcheck.cli.main import cli  # noqa: E402
from adcheck.gradcheck import check, gradcheck, gradgradcheck  # noqa: E402
from adcheck.gradcheck.core.options import Options  # noqa: E402
from pytest_adcheck import assert_gradients  # noqa: E402
from pytest_adcheck.cases import plan_cases  # noqa: E402
from explore_zoo import ZOO  # noqa: E402

SINC = next(e for e in ZOO if e.name == "sinc")


def _given():
    # ordinary inputs, no zero among them: the buggy sinc is right at each
    return (torch.tensor([0.5, -1.5, 2.0], dtype=torch.float64, requires_grad=True),)


def _nan_at_zero():
    """The buggy backward's own value at 0, computed here: 0/0, NaN."""
    zero = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(SINC.function(torch, "buggy")(zero).sum(), zero)
    return g


def test_check_runs_the_quick_pass_unless_told_not_to():
    assert torch.isnan(_nan_at_zero()).all()      # the bug the quick pass must find
    buggy = SINC.function(torch, "buggy")
    found = check(buggy, _given(), seed=0)
    assert not found.passed
    assert "at the explored point" in found.failures[0].detail
    assert found.counts["explore"]["findings"]
    off = check(buggy, _given(), seed=0, explore=False)
    assert off.passed and "explore" not in off.counts


def test_the_quick_pass_never_changes_the_verdict_at_the_given_inputs():
    buggy = SINC.function(torch, "buggy")
    found = check(buggy, _given(), seed=0)
    alone = check(buggy, _given(), seed=0, explore=False)
    added = [r for r in found.results if r.check == "explore"
             or "at the explored point" in (r.detail or "")]
    given = [r for r in found.results if not any(r is a for a in added)]
    assert added and [(r.check, r.passed) for r in given] == \
        [(r.check, r.passed) for r in alone.results]


def test_gradcheck_and_gradgradcheck_keep_pytorchs_meaning():
    buggy = SINC.function(torch, "buggy")
    assert gradcheck(buggy, _given())
    assert gradgradcheck(torch.sin, _given())
    assert Options.from_keywords().explore is False    # no quick pass outside check()
    with pytest.raises(Exception, match="at the explored point"):
        gradcheck(buggy, _given(), explore="quick")


def test_with_torchs_tolerances_the_quick_pass_runs_and_finds_a_nan():
    buggy = SINC.function(torch, "buggy")
    report = check(buggy, _given(), seed=0, precise=False, atol=1e-5, rtol=1e-3)
    assert not report.passed and report.settings["precise"] is False
    assert "at the explored point" in report.failures[0].detail


def test_an_explored_point_fails_only_outside_the_tolerances_asked_for():
    # sinh(x) - x with the cancelling backward cosh(x) - 1: 100 % off at 1e-8,
    # by less than 1e-15 in absolute terms (mpmath), inside atol = 1e-5
    entry = next(e for e in ZOO if e.name == "sinh_minus_x")
    x = torch.full((4,), 1e-8, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(entry.function(torch, "buggy")(x).sum(), x)
    with mpmath.workdps(40):
        exact = float(mpmath.cosh(mpmath.mpf(1e-8)) - 1)
    assert abs(g[0].item() - exact) > 0.5 * exact and abs(g[0].item() - exact) < 1e-5
    buggy, given = entry.function(torch, "buggy"), entry.inputs(torch, 0)
    asked = check(buggy, given, seed=0, atol=1e-5, rtol=1e-3)        # torch's tolerances
    assert asked.passed and asked.counts["explore"]["tried"] > 0
    precise = check(buggy, given, seed=0, precise=True)               # precise: 1e-8 fails
    assert not precise.passed and "1.0e-08" in precise.failures[0].detail


def test_assert_gradients_runs_the_quick_pass_by_default():
    buggy = SINC.function(torch, "buggy")
    with pytest.raises(AssertionError, match="at the explored point exact zero"):
        assert_gradients(buggy, _given(), check_forward_ad=False, order=1)
    assert_gradients(buggy, _given(), check_forward_ad=False, order=1, explore=False)


def test_the_marker_runs_the_quick_pass_by_default():
    (case, *_) = plan_cases(("sin",), dtypes="float64", checks="reverse")
    assert case.run()[0][0].message.startswith("explored ")
    (case, *_) = plan_cases(("sin",), dtypes="float64", checks="reverse", explore=False)
    assert not case.run()[0][0].message


def test_torch_tolerances_on_the_command_line_keep_the_quick_pass(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text("import torch\n\ndef square(x):\n    return x * x\n")
    result = CliRunner().invoke(cli, ["check", f"{path}:square", "--engine", "torch",
                                      "--check", "reverse", "--inputs", "randn(3)",
                                      "--torch-tolerances", "--format", "json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (reverse,) = json.loads(result.stdout)["results"]
    assert reverse["message"].startswith("explored ")
