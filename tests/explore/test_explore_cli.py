"""--explore on the command line, in the pytest marker and in assert_gradients."""
from __future__ import annotations

import json
import textwrap

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from click.testing import CliRunner  # noqa: E402

from adcheck.cli.main import cli  # noqa: E402
from pytest_adcheck import assert_gradients  # noqa: E402
from pytest_adcheck.cases import SelectionError, plan_cases  # noqa: E402

SINC = textwrap.dedent('''
    import torch

    class Sinc(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            safe = torch.where(x == 0, torch.ones_like(x), x)
            return torch.where(x == 0, torch.ones_like(x), torch.sin(safe) / safe)

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * (torch.cos(x) / x - torch.sin(x) / (x * x))
''')


@pytest.fixture
def sinc_file(tmp_path):
    path = tmp_path / "myops.py"
    path.write_text(SINC)
    return f"{path}:Sinc"


def _run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def test_check_explore_finds_the_zero_and_prints_the_point(sinc_file):
    plain = _run("check", sinc_file, "--engine", "torch", "--check", "reverse",
                 "--inputs", "randn(4)", "--no-explore")
    assert plain.exit_code == 0
    result = _run("check", sinc_file, "--engine", "torch", "--check", "reverse",
                  "--inputs", "randn(4)", "--explore", "--explore-budget", "5")
    assert result.exit_code == 1
    assert "at the explored point exact zero in input 0" in result.stdout
    assert "reproduce with: input0 = torch.tensor(" in result.stdout


def test_the_json_carries_the_point_and_what_was_tried(sinc_file):
    result = _run("check", sinc_file, "--engine", "torch", "--check", "reverse",
                  "--inputs", "randn(4)", "--explore", "--explore-budget", "5",
                  "--format", "json")
    doc = json.loads(result.stdout)
    (reverse,) = doc["results"]
    assert reverse["status"] == "failed"
    assert any("at the explored point exact zero" in (f["detail"] or "")
               for f in reverse["failures"])


def test_a_passing_check_says_what_exploring_tried(tmp_path):
    path = tmp_path / "good.py"
    path.write_text("import torch\n\ndef square(x):\n    return x * x\n")
    result = _run("check", f"{path}:square", "--engine", "torch", "--check", "reverse",
                  "--inputs", "randn(3)", "--explore", "--explore-budget", "1",
                  "--format", "json")
    assert result.exit_code == 0
    (reverse,) = json.loads(result.stdout)["results"]
    assert reverse["message"].startswith("explored ") and "outside the domain" in reverse["message"]


@pytest.mark.parametrize("budget", ["0", "-3", "soon", "inf"])
def test_a_bad_budget_is_one_line_and_exit_2(sinc_file, budget):
    result = _run("check", sinc_file, "--explore", "--explore-budget", budget)
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "--explore-budget must be a number of seconds > 0" in lines[0]


def test_ops_explore_passes_a_correct_registry_op():
    result = _run("ops", "relu", "--dtype", "float64", "--check", "reverse", "--explore",
                  "--explore-budget", "1", "--format", "json", "--jobs", "1")
    assert result.exit_code == 0, result.output
    results = json.loads(result.stdout)["results"]
    explored = [r for r in results if r["sample"] == 0]
    assert explored and all(r["message"].startswith("explored ") for r in explored)
    assert all(not r["message"] for r in results if r["sample"] != 0)


def test_the_marker_takes_explore():
    cases = plan_cases(("sin",), dtypes="float64", checks="reverse", explore=1.0)
    assert cases[0].run()[0][0].message.startswith("explored ")
    with pytest.raises(SelectionError, match="explore= takes True, False, 'quick' or a budget"):
        plan_cases(("sin",), explore="yes")


def test_assert_gradients_explores_too():
    x = torch.tensor([0.5, -1.5, 2.0], dtype=torch.float64, requires_grad=True)
    namespace: dict = {}
    exec(SINC, namespace)
    assert_gradients(namespace["Sinc"].apply, (x,), explore=False)
    with pytest.raises(AssertionError, match="at the explored point exact zero"):
        assert_gradients(namespace["Sinc"].apply, (x,), explore=True, explore_budget=3)


def test_check_and_ops_run_the_quick_pass_by_default(sinc_file):
    result = _run("check", sinc_file, "--engine", "torch", "--check", "reverse",
                  "--inputs", "randn(4)", "--format", "json")
    assert result.exit_code == 1
    (reverse,) = json.loads(result.stdout)["results"]
    assert any("at the explored point exact zero in input 0" in (f["detail"] or "")
               for f in reverse["failures"])
    ops = _run("ops", "relu", "--dtype", "float64", "--check", "reverse", "--format", "json",
               "--jobs", "1")
    assert ops.exit_code == 0, ops.output
    first = [r for r in json.loads(ops.stdout)["results"] if r["sample"] == 0]
    assert first and all(r["message"].startswith("explored ") for r in first)
    # the quick pass: a few points, none of the full catalogue's magnitudes
    assert all(int(r["message"].split()[1]) <= 8 for r in first)
    off = _run("ops", "relu", "--dtype", "float64", "--check", "reverse", "--format", "json",
               "--jobs", "1", "--no-explore")
    assert not any(r["message"] for r in json.loads(off.stdout)["results"])
