"""The marker's engine=, --adcheck-shard, the printed reproducer, and
--adcheck-plugin FILE (with a space) for a file outside the project.

Each run is a separate ``python -m pytest``; the oracles are the unsharded
collection (shards must partition it), ``adcheck ops`` (the same checks on
torch), the failure itself (the reproducer must rerun it), and the run
without the plugin option (the rootdir and ini file must not move).
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_registry import collected_ids, expected_ids, needs_xdist

from adcheck import refengine
pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]

TORCH_TEST = '''
import pytest

@pytest.mark.adcheck_ops("sin", "exp", "trunc", dtypes="float64", checks="reverse",
                         engine="torch")
def test_torch(adcheck_case):
    adcheck_case.assert_passes()
'''

WIDE_TEST = '''
import pytest

@pytest.mark.adcheck_ops("sin", "cos", "exp", "log", "tanh", checks="reverse")
def test_wide(adcheck_case):
    adcheck_case.assert_passes()
'''


def test_engine_torch_checks_torch_s_formulas(pytester):
    pytest.importorskip("torch", reason="torch is not installed; engine='torch' needs it")
    pytester.makepyfile(test_torch=TORCH_TEST)
    result = pytester.runpytest_subprocess("-v")
    names = ("sin", "exp", "trunc")
    result.assert_outcomes(passed=len(expected_ids(names, refengine.float64)))
    result.stdout.fnmatch_lines(["*test_torch[[]trunc-float64-sample0[]] PASSED*"])


def test_an_unknown_engine_is_a_collection_error(pytester):
    pytester.makepyfile(test_bad='''
        import pytest

        @pytest.mark.adcheck_ops("sin", engine="tensorflow")
        def test_ops(adcheck_case):
            pass
    ''')
    result = pytester.runpytest_inprocess()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*adcheck_ops: engine='tensorflow': choose from 'refengine', "
                                 "'torch'"])


def _ids(pytester, *args) -> list:
    # collecting runs no check: this process will do, and spares an interpreter start
    result = pytester.runpytest_inprocess("--collect-only", "-q", *args)
    assert result.ret == 0, result.stdout.str()
    return collected_ids(result)


def test_shards_partition_the_collection(pytester):
    pytester.makepyfile(test_wide=WIDE_TEST)
    whole = _ids(pytester)
    parts = [_ids(pytester, "--adcheck-shard", f"{k}/3") for k in (1, 2, 3)]
    assert sorted(i for part in parts for i in part) == sorted(whole)
    assert all(parts) and len({tuple(p) for p in parts}) == 3
    # a shard is whole tasks (op and dtype), and the same ones adcheck ops --shard runs
    from adcheck.runner.selection import plan, select
    from adcheck.runner.shard import shard_tasks
    from adcheck.runner.tasks import Settings
    tasks = plan(select(patterns=("sin", "cos", "exp", "log", "tanh")).infos, None,
                 Settings(checks=("reverse",)))
    for k, part in enumerate(parts, 1):
        mine = {f"{t.op}-{t.dtype}" for t in shard_tasks(tasks, k, 3)}
        assert {i.rsplit("-", 1)[0] for i in part} == mine


@needs_xdist
def test_a_shard_runs_under_xdist(pytester):
    pytester.makepyfile(test_wide=WIDE_TEST)
    expected = _ids(pytester, "--adcheck-shard", "2/3")
    result = pytester.runpytest_subprocess("-n", "2", "--adcheck-shard", "2/3")
    result.assert_outcomes(passed=len(expected))


def test_a_bad_shard_is_a_usage_error(pytester):
    pytester.makepyfile(test_wide=WIDE_TEST)
    result = pytester.runpytest_subprocess("--adcheck-shard", "4/3")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--adcheck-shard expects K/N with 1 <= K <= N*"])


def test_the_printed_reproducer_reruns_the_failure(project):
    project.makepyfile(test_proj='''
        import pytest

        @pytest.mark.adcheck_ops("proj_doubled_sin", checks="reverse")
        def test_proj(adcheck_case):
            adcheck_case.assert_passes()
    ''')
    result = project.runpytest_subprocess("--adcheck-plugin", "proj_opinfos.py",
                                          "--adcheck-seed", "4")
    result.assert_outcomes(failed=1)
    text = "\n".join(line[1:].strip() if line.startswith("E") else ""
                     for line in result.stdout.lines)
    code = re.search(r"from adcheck import runner\n.*?print\(report\.message\(\)\)", text, re.S).group(0)
    assert "seed=4" in code and "proj_opinfos.py" in code
    failure = next(line for line in text.splitlines() if "reverse-mode Jacobian" in line)
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=REPO, timeout=120, env={"PYTHONPATH": str(REPO), "PATH": ""})
    assert ran.stdout.splitlines()[0] == failure, ran.stderr


OUTSIDE_PLUGIN = '''
import adcheck.refengine as E
from adcheck.opinfo import OpInfo
from adcheck.opinfo.samples import unary

OPINFOS = [OpInfo("outside_sin", E.sin, family="outside", dtypes=(E.float64,),
                  sample_func=unary(shapes=((3,),)), supports_gradgrad=False,
                  supports_fwgrad_bwgrad=False)]
'''


@pytest.mark.parametrize("xdist", [False, pytest.param(True, marks=needs_xdist)])
def test_a_plugin_outside_the_project_keeps_rootdir_and_ini(pytester, tmp_path_factory,
                                                           xdist):
    outside = tmp_path_factory.mktemp("outside") / "ext_opinfos.py"
    outside.write_text(OUTSIDE_PLUGIN)
    # the project's ini: a marker that --strict-markers (its addopts) needs, and testpaths
    pytester.makeini("[pytest]\nmarkers = local: a marker of this project\n"
                     "addopts = --strict-markers\ntestpaths = checks\n")
    pytester.mkpydir("checks").joinpath("test_outside.py").write_text('''
import pytest

@pytest.mark.local
@pytest.mark.adcheck_ops("outside_*", checks="reverse")
def test_outside(adcheck_case):
    adcheck_case.assert_passes()
''')
    pytester.makepyfile(test_not_in_testpaths="def test_never(): raise AssertionError")
    args = ["--adcheck-plugin", str(outside)] + (["-n", "2"] if xdist else [])
    result = pytester.runpytest_subprocess(*args)
    result.stdout.fnmatch_lines([f"rootdir: {pytester.path}", "configfile: tox.ini"])
    result.assert_outcomes(passed=1)
