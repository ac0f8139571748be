"""pytest --adcheck-harvest on a sample project: its ordinary tests call custom
Functions; each Function (by input shapes) becomes a test item of its own."""
from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                reason="PyTorch is not installed: the sample project's tests "
                                "and Functions are torch code")

PROJECT = Path(__file__).resolve().parent / "sample_project"


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    xml = tmp_path_factory.mktemp("harvest") / "junit.xml"
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                           "--adcheck-harvest", f"--junitxml={xml}"], cwd=PROJECT,
                          capture_output=True, text=True, timeout=600)
    # junit splits an id at its last "::": adcheck-harvest items are in class "adcheck-harvest"
    cases = {f"{c.get('classname').lstrip('.')}::{c.get('name')}": c
             for c in ET.parse(xml).getroot().iter("testcase")}
    return done, cases


def _status(case) -> str:
    for tag in ("failure", "error", "skipped"):
        if case.find(tag) is not None:
            return tag
    return "passed"


def test_each_function_and_shape_is_a_test_item_after_the_suites_own(session):
    done, cases = session
    harvested = {n: _status(c) for n, c in cases.items() if n.startswith("adcheck-harvest")}
    assert harvested == {
        "adcheck-harvest::Softplus[(5,)]": "passed",
        "adcheck-harvest::Cube[(1,)]": "failure",
        "adcheck-harvest::Softplus[(3, 4)]": "passed",
        "adcheck-harvest::Cube[(3, 4)]": "failure",
        "adcheck-harvest::Softplus[(2, 2)]": "skipped",
    }, done.stdout
    own = [n for n in cases if n.startswith("test_layers::")]
    assert len(own) == 4 and all(_status(cases[n]) == "passed" for n in own)
    assert done.returncode == 1


def test_a_failing_item_carries_the_report_and_the_test_that_applied_it(session):
    done, cases = session
    text = cases["adcheck-harvest::Cube[(3, 4)]"].find("failure").text
    # the backward is 2 x^2 where d(x^3)/dx is 3 x^2: a factor 2/3
    factor = re.search(r"analytical is (\S+) times numerical", text)
    assert abs(float(factor.group(1)) - 2 / 3) < 1e-6
    assert "applied first by test_layers.py::test_gate_keeps_the_shape" in text
    skipped = cases["adcheck-harvest::Softplus[(2, 2)]"].find("skipped").get("message")
    assert "applied under no_grad" in skipped

