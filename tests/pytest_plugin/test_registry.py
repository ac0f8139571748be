"""@pytest.mark.adcheck_ops: one test per OpInfo, dtype and sample, with readable
ids, passing and failing as ``adcheck ops`` does, also under pytest-xdist.

Each run is a separate ``python -m pytest`` without ``-p``: the marker and the
``adcheck_case`` argument come from the entry point. The runs are kept to two
or three ops and the ``reverse`` check, so that each takes a second or two.
"""
from __future__ import annotations

import importlib.util

import pytest

from adcheck import opinfo
from adcheck import refengine
pytest_plugins = ["pytester"]

REGISTRY_TEST = '''
import pytest

@pytest.mark.adcheck_ops("sin", "exp", dtypes="float64", checks="reverse")
def test_ops(adcheck_case):
    adcheck_case.assert_passes()
'''

PROJECT_TEST = '''
import pytest

@pytest.mark.adcheck_ops("proj_*", checks=["reverse"])
def test_proj(adcheck_case):
    adcheck_case.assert_passes()
'''

HAS_XDIST = importlib.util.find_spec("xdist") is not None
needs_xdist = pytest.mark.skipif(not HAS_XDIST,
                                 reason="pytest-xdist is not installed (pip install "
                                        "adcheck[xdist]); the -n 2 runs need it")


def expected_ids(names: tuple, dtype) -> list:
    """The ids the marker should give: registry order, then sample index."""
    ids, dtype_name = [], str(dtype).rsplit(".", 1)[-1]
    for info in opinfo.op_db:
        if info.name in names:
            count = sum(1 for _ in info.sample_func(info, dtype))
            ids += [f"{info.name}-{dtype_name}-sample{i}" for i in range(count)]
    return ids


def collected_ids(result) -> list:
    lines = [line for line in result.stdout.lines if "::" in line]
    return [line.split("[", 1)[1].rstrip("]") for line in lines]


def test_collects_one_test_per_op_dtype_and_sample(pytester):
    pytester.makepyfile(test_reg=REGISTRY_TEST)
    result = pytester.runpytest_subprocess("--collect-only", "-q", "--strict-markers")
    assert result.ret == 0, result.stdout.str()
    ids = collected_ids(result)
    assert ids == expected_ids(("sin", "exp"), refengine.float64)
    assert "sin-float64-sample0" in ids and "exp-float64-sample3" in ids
    result.stdout.fnmatch_lines(["test_reg.py::test_ops[[]sin-float64-sample0[]]"])


def test_registry_cases_pass(pytester):
    pytester.makepyfile(test_reg=REGISTRY_TEST)
    result = pytester.runpytest_subprocess("-v", "--strict-markers")
    n = len(expected_ids(("sin", "exp"), refengine.float64))
    result.assert_outcomes(passed=n)
    result.stdout.fnmatch_lines(["*test_ops[[]sin-float64-sample1[]] PASSED*"])


def test_plugin_file_ops_fail_xfail_and_pass(project):
    project.makepyfile(test_proj=PROJECT_TEST)
    result = project.runpytest_subprocess("--adcheck-plugin", "proj_opinfos.py", "-rx")
    result.assert_outcomes(passed=1, failed=1, xfailed=1)
    result.stdout.fnmatch_lines([
        "E * proj_doubled_sin float64[[]0[]] reverse: failed",
        ("E * proj_doubled_sin: reverse-mode Jacobian differs from numerical for output 0, "
         "input 0 (max error * at [[]*[]], tolerance *; analytical is 2 times numerical*"),
        ("*XFAIL test_proj.py::test_proj[[]proj_known_sin-float64-sample0[]]*"
         "tracked as issue 7 of the project*"),
    ])


def test_plugin_files_from_the_ini_option(project):
    project.makepyfile(test_proj=PROJECT_TEST)
    project.makeini("[pytest]\nadcheck_plugins = proj_opinfos.py\n")
    result = project.runpytest_subprocess("--collect-only", "-q")
    assert collected_ids(result) == ["proj_good_sin-float64-sample0",
                                     "proj_doubled_sin-float64-sample0",
                                     "proj_known_sin-float64-sample0"]


def test_a_missing_plugin_file_is_a_usage_error(pytester):
    pytester.makepyfile(test_reg=REGISTRY_TEST)
    result = pytester.runpytest_subprocess("--adcheck-plugin", "missing_opinfos.py")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: adcheck: plugin '*missing_opinfos.py': no such file"])


def test_all_checks_skipped_skips_with_the_reason(project):
    project.makepyfile(test_ref='''
        import pytest

        @pytest.mark.adcheck_ops("proj_good_sin", checks="reference")
        def test_ref(adcheck_case):
            adcheck_case.assert_passes()
    ''')
    result = project.runpytest_subprocess("--adcheck-plugin", "proj_opinfos.py", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED*reference: the op has no mpmath reference*"])


SKIPPED_OP_TEST = '''
import pytest

@pytest.mark.adcheck_ops("proj_good_sin", "proj_doubled_sin", checks={checks!r})
def test_ref(adcheck_case):
    adcheck_case.assert_passes()
'''


def test_an_op_with_nothing_judged_fails_the_session_as_the_command_line_exits_3(project):
    """As ``adcheck ops`` exits 3 when an op had every check skipped, the session
    fails (its cases skip) and the summary names the op and the reason."""
    project.makepyfile(test_ref=SKIPPED_OP_TEST.format(checks="reference"))
    result = project.runpytest_subprocess("--adcheck-plugin", "proj_opinfos.py")
    result.assert_outcomes(skipped=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "*adcheck: nothing checked*",
        "NOT CHECKED proj_good_sin (test_ref.py::test_ref): every check of every case was "
        "skipped (reference: the op has no mpmath reference*",
        "2 ops had nothing judged: the session fails (pass --adcheck-allow-empty to accept)"])
    allowed = project.runpytest_subprocess("--adcheck-plugin", "proj_opinfos.py",
                                           "--adcheck-allow-empty")
    assert allowed.ret == pytest.ExitCode.OK
    allowed.stdout.fnmatch_lines(["*accepted by --adcheck-allow-empty"])


def test_an_op_judged_in_one_check_passes_the_session(project):
    project.makepyfile(test_ref=SKIPPED_OP_TEST.format(checks=["reference", "reverse"])
                       .replace('"proj_doubled_sin", ', ""))
    result = project.runpytest_subprocess("--adcheck-plugin", "proj_opinfos.py")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.OK and "NOT CHECKED" not in result.stdout.str()


RAISING_OPINFOS = '''
import adcheck.refengine as E
from adcheck.opinfo import OpInfo
from adcheck.opinfo.samples import unary
from adcheck.refengine.autograd import Function


class Unfinished(Function):
    @staticmethod
    def forward(ctx, x):
        return E.sin(x)

    @staticmethod
    def backward(ctx, grad):
        raise ValueError("the backward is unfinished")


OPINFOS = [OpInfo("proj_unfinished", Unfinished.apply, family="proj", dtypes=(E.float64,),
                  sample_func=unary(shapes=((3,),)), supports_forward_ad=False,
                  supports_gradgrad=False, supports_fwgrad_bwgrad=False)]
'''


def test_an_erroring_case_shows_the_users_frames_and_a_reproducer(pytester):
    """Issue 28, item 8: the marker's error, as the command line's JSON has it."""
    pytester.makepyfile(raising_opinfos=RAISING_OPINFOS, test_err='''
        import pytest

        @pytest.mark.adcheck_ops("proj_unfinished", checks="reverse")
        def test_err(adcheck_case):
            adcheck_case.assert_passes()
    ''')
    result = pytester.runpytest_subprocess("--adcheck-plugin", "raising_opinfos.py")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "E * proj_unfinished float64[[]0[]] reverse: error: *the backward is unfinished*",
        "E *Traceback of your code (most recent call last):",
        "E *raising_opinfos.py*, line 14, in backward",
        "E *ValueError: the backward is unfinished",
        "E *reproduce:",
        "E *report = runner.rebuild(",
        "E *'proj_unfinished', 'float64', 0, 'reverse',"])


@needs_xdist
def test_under_xdist_the_controller_sees_the_skipped_op(project):
    project.makepyfile(test_ref=SKIPPED_OP_TEST.format(checks="reference"))
    result = project.runpytest_subprocess("--adcheck-plugin", "proj_opinfos.py", "-n", "2")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["NOT CHECKED proj_doubled_sin (test_ref.py::test_ref)*"])


def test_case_offers_the_sample_as_a_function(pytester):
    pytester.makepyfile(test_case='''
        import pytest
        from pytest_adcheck import assert_gradients

        @pytest.mark.adcheck_ops("sin", dtypes=["float64"])
        def test_own_check(adcheck_case):
            assert adcheck_case.op.name == "sin" and adcheck_case.dtype_name == "float64"
            call = adcheck_case.call
            assert_gradients(call.func, call.inputs, check_forward_ad=True)
    ''')
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=len(expected_ids(("sin",), refengine.float64)))


BAD_MARKERS = {
    "test_bad_name": ('"sinn"', "no OpInfo named 'sinn'; did you mean 'sin'*"),
    "test_bad_family": ('"sin", family="nope"', "unknown family 'nope'; known families: *"),
    "test_bad_dtype": ('"sin", dtypes="float16"',
                       "dtypes 'float16' exist on torch only (refengine has *); add "
                       "engine='torch'"),
    "test_bad_check": ('"sin", checks="backward"', "unknown check 'backward'; choose from *"),
    "test_bad_keyword": ('"sin", dtype="float64"',
                         "takes the keywords family, dtypes, checks, engine, registry, explore, not dtype"),
}


def test_a_bad_selection_is_a_collection_error_that_says_why(pytester):
    for module, (marker, _) in BAD_MARKERS.items():
        pytester.makepyfile(**{module: f'''
            import pytest

            @pytest.mark.adcheck_ops({marker})
            def test_ops(adcheck_case):
                pass
        '''})
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(errors=len(BAD_MARKERS))
    for module, (_, message) in BAD_MARKERS.items():
        result.stdout.fnmatch_lines([f"{module}.py::test_ops: adcheck_ops: {message}"])


def test_marker_without_the_argument_and_argument_without_marker(pytester):
    pytester.makepyfile(test_missing='''
        import pytest

        @pytest.mark.adcheck_ops("sin")
        def test_no_argument():
            pass
    ''', test_unmarked='''
        def test_no_marker(adcheck_case):
            pass
    ''')
    result = pytester.runpytest_subprocess("--continue-on-collection-errors")
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines([
        ("test_missing.py::test_no_argument: a test marked adcheck_ops must take an argument "
         "named 'adcheck_case'"),
        ("*test_unmarked.py::test_no_marker: the 'adcheck_case' argument comes from the "
         "adcheck_ops marker; add @pytest.mark.adcheck_ops('sin', ...) to the test"),
    ])


@needs_xdist
def test_registry_and_plugin_ops_under_xdist(project):
    project.makepyfile(test_reg=REGISTRY_TEST, test_proj=PROJECT_TEST)
    result = project.runpytest_subprocess("-n", "2", "-v", "--strict-markers",
                                          "--adcheck-plugin", "proj_opinfos.py")
    n = len(expected_ids(("sin", "exp"), refengine.float64))
    result.assert_outcomes(passed=n + 1, failed=1, xfailed=1)
    result.stdout.fnmatch_lines(["created: 2/2 workers",
                                 "*[[]gw?[]]*PASSED test_reg.py::test_ops[[]sin-float64-*"])
    result.stdout.fnmatch_lines(["E * analytical is 2 times numerical*"])
