"""A lambda kept under a name (``square = lambda x: x * x``, or ``jax.jit`` of
one, as tfp users write) is named as the command line asked for it, not
``<lambda>``."""
from __future__ import annotations

import json

from click.testing import CliRunner

from adcheck.cli.main import cli


def test_a_lambda_target_is_named_by_its_attribute(tmp_path):
    (tmp_path / "fns.py").write_text("square = lambda x: x * x\n")
    result = CliRunner().invoke(cli, ["check", f"{tmp_path / 'fns.py'}:square", "--inputs",
                                      "randn(3)", "--check", "reverse", "--no-explore",
                                      "--format", "json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    ops = {r["op"] for r in json.loads(result.stdout)["results"]}
    assert ops == {"square"}
