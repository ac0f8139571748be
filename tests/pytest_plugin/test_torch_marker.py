"""@pytest.mark.adcheck_ops(..., registry="torch"): PyTorch's op_db as test cases,
selected and judged as ``adcheck ops --registry torch`` does.

The pytest run below is in process, after this process has imported op_db, so
that it costs the checks and not a second import.
"""
from __future__ import annotations

import pytest

pytest.importorskip("torch", reason="registry='torch' checks PyTorch's op_db; torch is not "
                    "installed")
pytest.importorskip("expecttest", reason="PyTorch's op_db imports expecttest, which is not "
                    "installed (pip install expecttest)")

from adcheck.opinfo import torchdb  # noqa: E402
from pytest_adcheck.cases import SelectionError, plan_cases  # noqa: E402

pytest_plugins = ["pytester"]

TORCH_TEST = '''
import pytest

@pytest.mark.adcheck_ops("mul", "as_strided_scatter", "cov", dtypes="float64",
                         checks="reverse", registry="torch")
def test_op_db(adcheck_case):
    adcheck_case.assert_passes()
'''


@pytest.fixture(scope="module")
def db():
    return torchdb.entries()


def test_cases_take_the_registrys_dtypes_checks_and_first_samples(db):
    cases = plan_cases(("mul",), registry="torch")
    mul = torchdb.get("mul")
    assert [c.dtype_name for c in cases[::2]] == [torchdb.dtype_name(d) for d in mul.dtypes]
    assert [c.id for c in cases[:2]] == ["mul-float64-sample0", "mul-float64-sample1"]
    case = cases[0]
    assert case.checks == ("reverse", "forward", "gradgrad", "fwgrad_bwgrad")
    assert case.settings.policy.engine == "torch"
    assert case.op is mul and case.call.inputs


def test_a_case_runs_with_the_sweeps_seed_and_torchs_flags(db):
    from adcheck.runner.checks import derive_seed
    case = plan_cases(("addmm",), dtypes="float64", checks="reverse", registry="torch")[1]
    (result, report), = case.run()
    assert result.status == "passed"
    assert result.seed == report.seed == derive_seed(0, "addmm", "float64", 1, "reverse")


def test_an_unknown_dtype_of_the_registry_is_refused(db):
    with pytest.raises(SelectionError, match="choose from float64, complex128"):
        plan_cases(("mul",), dtypes="float65", registry="torch")
    with pytest.raises(SelectionError, match="unknown registry 'jax'"):
        plan_cases(("mul",), registry="jax")


def test_known_failures_xfail_and_stale_ones_warn(db, pytester):
    pytester.makepyfile(test_op_db=TORCH_TEST)
    result = pytester.runpytest_inprocess("-q", "-p", "no:cacheprovider", "-W",
                                          "always::UserWarning")
    result.assert_outcomes(passed=4, xfailed=2)
    text = result.stdout.str()
    assert "cov float64[0] reverse: passed although declared a known failure" in text
