"""Fixtures for the adcheck command tests: a CliRunner and the fixture files."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from adcheck.cli.main import cli


@pytest.fixture
def run():
    """``run(*args)`` invokes ``adcheck args`` and returns click's Result
    (``exit_code``, ``stdout``, ``stderr``)."""
    runner = CliRunner()

    def invoke(*args):
        return runner.invoke(cli, [str(a) for a in args], catch_exceptions=False)
    return invoke


@pytest.fixture
def run_json(run):
    """``run_json(*args)`` adds ``--format json``; returns (Result, document)."""
    def invoke(*args):
        result = run(*args, "--format", "json")
        return result, json.loads(result.stdout)
    return invoke


@pytest.fixture(autouse=True)
def _plugins_do_not_outlive_their_test(restored_registry):
    """Each ``adcheck`` command is a process of its own, so a plugin file's ops are
    seen by the run that loads it only; CliRunner runs commands in this process,
    where they would stay registered (a later ``cli_*`` would select another test's
    hanging op). ``restored_registry`` (tests/conftest.py) puts it back."""
    yield
