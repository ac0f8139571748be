"""assert_gradients in a user's own test file: loads through the entry point,
passes on a right formula, fails with adcheck's report on a wrong one.

Every run is a separate ``python -m pytest`` (pytester's subprocess) with no
``-p`` flag, so the plugin can only come from the ``pytest11`` entry point.
"""
from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata

pytest_plugins = ["pytester"]

ONE_LINE_TESTS = '''
import adcheck.refengine as E
from pytest_adcheck import assert_gradients
from myfuncs import DoubledSin, GoodSin


def test_good_sin():
    assert_gradients(GoodSin.apply, E.randn(3, dtype=E.float64, requires_grad=True))


def test_doubled_sin():
    assert_gradients(DoubledSin.apply, E.randn(3, dtype=E.float64, requires_grad=True))
'''


def test_the_plugin_is_registered_as_a_pytest11_entry_point():
    found = {ep.name: ep.value for ep in metadata.entry_points(group="pytest11")}
    assert found.get("adcheck") == "pytest_adcheck"


def test_one_line_test_passes_and_wrong_formula_fails(project):
    project.makepyfile(test_user=ONE_LINE_TESTS)
    result = project.runpytest_subprocess("-rf")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*FAILED test_user.py::test_doubled_sin - AssertionError*"])


def test_failure_shows_the_report_and_hides_the_helper(project):
    project.makepyfile(test_user=ONE_LINE_TESTS)
    result = project.runpytest_subprocess("-k", "doubled")
    result.assert_outcomes(failed=1, deselected=1)
    # the report: the worst entry and the diagnosis, both Jacobians, the seed
    result.stdout.fnmatch_lines([
        ("E * DoubledSin: reverse-mode Jacobian differs from numerical for output 0, input 0 "
         "(max error * at [[]*, *[]], tolerance *; analytical is 2 times numerical "
         "(relative error 1.0e+00): a constant factor in the vjp is off)"),
        "E * numerical:",
        "E * reverse:",
        "E * (pass seed=* to repeat this run's random probes)",
    ])
    # the traceback ends in the user's line, not inside the helper or gradcheck
    out = result.stdout.str()
    assert ">       assert_gradients(DoubledSin.apply" in out
    assert "pytest_adcheck" not in out and "gradcheck.check(func" not in out


def test_the_fixture_is_the_same_helper(project):
    project.makepyfile(test_fixture='''
        import adcheck.refengine as E
        from myfuncs import DoubledSin, GoodSin

        def test_good(assert_gradients):
            report = assert_gradients(GoodSin.apply, (E.randn(2, dtype=E.float64,
                                                               requires_grad=True),))
            assert report.passed and report.name == "GoodSin"

        def test_doubled(assert_gradients):
            assert_gradients(DoubledSin.apply, E.randn(2, dtype=E.float64,
                                                        requires_grad=True))
    ''')
    result = project.runpytest_subprocess()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["E * analytical is 2 times numerical*"])


def test_check_keywords_reach_gradcheck(project):
    # check_forward_ad=True on a Function without jvp: gradcheck's own error
    project.makepyfile(test_kw='''
        import adcheck.refengine as E
        from pytest_adcheck import assert_gradients
        from myfuncs import GoodSin

        def test_forward(assert_gradients):
            assert_gradients(GoodSin.apply, E.randn(2, dtype=E.float64, requires_grad=True),
                             check_forward_ad=True, check_backward_ad=False)

        def test_seed_is_recorded():
            report = assert_gradients(E.sin, E.randn(2, dtype=E.float64, requires_grad=True),
                                      seed=1234, precise=True)
            assert report.seed == 1234 and report.settings["precise"] is True
    ''')
    result = project.runpytest_subprocess()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*GradcheckError*jvp*"])


HEAVY = ("numpy", "adcheck.refengine", "adcheck.gradcheck", "adcheck.opinfo", "adcheck.cli", "rich", "mpmath")


def test_importing_the_plugin_imports_nothing_heavy():
    code = ("import sys, pytest_adcheck\n"
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, check=False, env=dict(os.environ))
    assert result.stdout.strip() == "[]", result.stderr


def test_a_project_that_does_not_use_it_imports_nothing_of_adcheck(pytester):
    pytester.makepyfile(test_plain='''
        import sys

        def test_nothing_of_adcheck_loaded():
            loaded = [m for m in ("adcheck", "adcheck.refengine", "adcheck.gradcheck", "adcheck.opinfo", "adcheck.cli") if m in sys.modules]
            assert loaded == []
            assert "pytest_adcheck" in sys.modules   # the plugin itself did load
    ''')
    result = pytester.runpytest_subprocess("--strict-markers")
    result.assert_outcomes(passed=1)
