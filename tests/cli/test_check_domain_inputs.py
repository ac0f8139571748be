"""``adcheck check`` of a function that is NaN on part of ``randn``'s range
(a log, a square root, atanh, acosh), with no ``--inputs``.

``adcheck check torch:log`` exited 0 with its real inputs never checked:
each real default set has negative entries, so every real check was a skip
("the function's output is NaN") and only the complex set was judged;
``xlogy``, without a complex kernel, exited 3 with nothing judged. A set the
object runs on with NaN or inf outputs is now moved into (0.1, 0.9), then
(1.1, 2.1), the first where every output is finite kept, with a warning."""
from __future__ import annotations

import pytest

DOMAINS = '''
import adcheck.refengine as E


def entropy_term(p):
    return p * E.log(p)


def root_of_shift(x):
    return E.sqrt(x - 1.0)


def nowhere_finite(x):
    return E.log(-(x * x) - 1.0)
'''


@pytest.fixture
def domains(tmp_path):
    path = tmp_path / "domains.py"
    path.write_text(DOMAINS)
    return path


def _statuses(doc):
    return {(r["dtype"], r["status"]) for r in doc["results"]}


def test_a_log_is_checked_on_its_real_inputs_too(run_json, domains):
    result, doc = run_json("check", f"{domains}:entropy_term", "--check", "reverse")
    assert result.exit_code == 0, result.output
    assert _statuses(doc) == {("float64", "passed"), ("complex128", "passed")}
    assert "rand(3, 4) * 0.8 + 0.1 instead, where it is finite" in result.stderr


def test_the_second_range_when_the_first_is_not_finite(run_json, domains):
    result, doc = run_json("check", f"{domains}:root_of_shift", "--check", "reverse")
    assert result.exit_code == 0, result.output
    assert ("float64", "passed") in _statuses(doc)
    assert "rand(3, 4) + 1.1 instead" in result.stderr


def test_refengine_log_itself(run_json):
    result, doc = run_json("check", "adcheck.refengine:log", "--check", "reverse")
    assert result.exit_code == 0, result.output
    assert ("float64", "passed") in _statuses(doc)


def test_a_function_finite_nowhere_still_says_nothing_was_judged(run, domains):
    result = run("check", f"{domains}:nowhere_finite", "--check", "reverse", "-v")
    # (its complex set is finite, and judged: the real one is a skip that says why)
    assert result.exit_code == 0, result.output
    assert "SKIP" in result.output and "NaN or inf" in result.output
    assert "instead, where it is finite" not in result.stderr


def test_a_torch_function_without_a_complex_kernel_is_checked_not_left_unjudged(run_json):
    pytest.importorskip("torch", reason="torch's xlogy (pip install torch)")
    result, doc = run_json("check", "torch:xlogy", "--check", "reverse")
    assert result.exit_code == 0, result.output
    assert _statuses(doc) == {("float64", "passed")}
