"""gradcheck.harvest and adcheck check --harvest on JAX custom_vjp / custom_jvp."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

jax = pytest.importorskip("jax", reason="jax is not installed (pip install adcheck[jax])")
jnp = pytest.importorskip("jax.numpy", reason="jax is not installed (pip install adcheck[jax])")

from adcheck import gradcheck  # noqa: E402
from adcheck.cli.main import cli  # noqa: E402

HERE = Path(__file__).resolve().parent


@pytest.fixture
def x64():
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", previous)


@pytest.fixture
def jm():
    import jax_model
    return jax_model


def test_the_wrong_custom_vjp_is_named_and_the_right_custom_jvp_passes(x64, jm):
    found = gradcheck.harvest(jm.model, jm.example_inputs(), seed=0)
    assert [op.name for op in found.ops] == ["model:softclip", "model:square"]
    assert found.failing() == ["model:softclip"]
    assert found.localisation == "the whole model fails; at fault on their own: model:softclip"
    (report,) = found.reports["model:softclip"]
    assert report.failures[0].in_name == "x"
    factor = re.search(r"analytical is (\S+) times numerical", report.failures[0].diagnosis)
    assert abs(float(factor.group(1)) - 1.5) < 1e-6


def test_the_custom_vjp_is_wrong_by_1_5_by_a_central_difference(x64, jm):
    x, h = 0.7, 1e-6
    (g,) = jax.vjp(lambda v: jm.softclip(v, 2.0), x)[1](1.0)
    fd = (2.0 * np.tanh((x + h) / 2) - 2.0 * np.tanh((x - h) / 2)) / (2 * h)
    assert abs(float(g) / fd - 1.5) < 1e-7


def test_under_jit_the_applications_are_not_checked_and_say_why(x64, jm):
    found = gradcheck.harvest(jax.jit(jm.model), jm.example_inputs(), model_check=False)
    assert found.reports == {}
    assert "harvest the model without jax.jit" in found.skipped["model:softclip"]


def test_the_command_line_with_example_inputs(x64):
    result = CliRunner().invoke(cli, ["check", f"{HERE / 'jax_model.py'}:model", "--harvest",
                                      "--engine", "jax", "--format", "json"],
                                catch_exceptions=False)
    assert result.exit_code == 1, result.output
    results = json.loads(result.stdout)["results"]
    failing = {r["op"] for r in results if r["status"] == "failed"}
    assert failing == {"model:softclip", "model"}
    square = [(r["check"], r["status"]) for r in results if r["op"] == "model:square"]
    # reverse, forward through its jvp, and second order (the default checks)
    assert square == [("reverse", "passed"), ("forward", "passed"), ("gradgrad", "passed")]
