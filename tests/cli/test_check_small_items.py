"""The small items of issue 28 (item 9), one test each: the HTML header of a
user's object, --format html, advice in the command line's terms, known
failures noted once, and the diagnoses of a transposed square weight
gradient, a reduction over the wrong axis and one term's sign flipped."""
import re
from pathlib import Path

import numpy as np
import pytest

#: the examples of docs/check.md: right and wrong Functions of a new user's first hour
FIRST_HOUR = str(Path(__file__).resolve().parents[2] / "examples" / "first_hour.py")


def test_the_html_header_of_check_names_the_object_and_its_own_dtypes(run, tmp_path):
    page = tmp_path / "r.html"
    run("check", f"{FIRST_HOUR}:ScaledWeightGrad", "--inputs", "randn(2, 3); randn(2, 3)",
        "--check", "reverse", "--html", page)
    (meta,) = re.findall(r'<p class="meta">([^<]*)', page.read_text())
    assert "registry" not in meta and "complex128" not in meta
    assert f"refengine Function {FIRST_HOUR}:ScaledWeightGrad" in meta
    assert "dtypes float64" in meta


@pytest.mark.parametrize("command", [("check", f"{FIRST_HOUR}:NoJvpSin"), ("ops", "sin"),
                                     ("op", "sin")])
def test_format_html_points_to_the_html_option(run, command):
    result = run(*command, "--format", "html")
    assert result.exit_code == 2 and "--html PATH" in result.stderr


def test_advice_on_the_command_line_is_an_option_and_python_only_keywords_say_so():
    from adcheck.cli.formats.advice import cli_terms
    assert cli_terms("check the jvp formula, or pass check_forward_ad=False if the function "
                     "has none") == ("check the jvp formula, or leave forward out of --check "
                                     "(--check reverse) if the function has none")
    assert cli_terms("precise=True judges the float32 formula") == \
        "--precise judges the float32 formula"
    detached = cli_terms("declared non-differentiable on purpose, pass check_detached=False")
    assert "in Python pass check_detached=False to gradcheck.check" in detached
    assert "no option of the command line" in detached


def test_a_nondeterministic_function_is_not_told_of_an_option_there_is_none_of(run, tmp_path):
    # (found on gpytorch: "set nondet_tol >= 1.9e-09", and --nondet-tol is no option)
    (tmp_path / "noisy.py").write_text(
        "import numpy as np\nimport adcheck.refengine as E\n"
        "def noisy(x):\n    return E.sin(x) + E.tensor(1e-9 * np.random.randn(*x.shape))\n")
    result = run("check", f"{tmp_path / 'noisy.py'}:noisy", "--inputs", "randn(3, 4)",
                 "--check", "reverse", "-q")
    assert result.exit_code == 1, result.output
    assert "nondeterministic" in result.output
    assert "set nondet_tol" not in result.output
    assert "to gradcheck.check in Python: no option of the command line sets it" in \
        result.output
    assert run("check", "x.py:f", "--nondet-tol", "1e-8").exit_code == 2   # (really none)


def test_a_raising_jvp_is_reported_with_the_option_to_leave_forward_out(run, tmp_path):
    (tmp_path / "j.py").write_text(
        "import adcheck.refengine as E\n"
        "from adcheck.refengine.autograd import Function\n"
        "class BadJvp(Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, x):\n"
        "        return E.sin(x)\n"
        "    @staticmethod\n"
        "    def backward(ctx, g):\n"
        "        return g\n"
        "    @staticmethod\n"
        "    def jvp(ctx, t):\n"
        "        raise RuntimeError('broken jvp')\n")
    result = run("check", f"{tmp_path / 'j.py'}:BadJvp", "--inputs", "randn(3)",
                 "--check", "forward")
    assert "broken jvp" in result.stdout
    assert "--check reverse" in result.stdout and "check_forward_ad" not in result.stdout


def test_known_failures_with_one_reason_are_noted_once():
    from adcheck.cli.formats.op_view import known_failure_notes
    from adcheck.opinfo import registry
    from adcheck.runner.registry import describe
    declared = describe(registry.get("linalg.det"))["known_failures"]
    assert len(declared) > len({kf["reason"] for kf in declared})   # per dtype, repeated
    notes = known_failure_notes(declared)
    assert len(notes) == len({kf["reason"] for kf in declared})
    for checks, samples, reason in notes:
        same = [kf for kf in declared if kf["reason"] == reason]
        assert set(checks) == {kf["check"] for kf in same}
        assert set(samples) == {s for kf in same for s in kf["samples"] or ()}


def test_a_transposed_square_weight_gradient_is_diagnosed(run_json):
    result, doc = run_json("check", f"{FIRST_HOUR}:TransposedWeightGrad", "--inputs",
                           "randn(3, 4); randn(4, 4)", "--check", "reverse")
    assert result.exit_code == 1
    (reverse,) = doc["results"]
    assert "n x n entries transposed" in reverse["diagnosis"]
    assert reverse["failures"][0]["in_idx"] == 1     # the weight, not x


def test_the_transposed_weight_candidate_is_the_columns_of_the_transpose():
    from adcheck.gradcheck.verdict.diagnosis import diagnose
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3))
    # y = x @ w: dy[i, j] / dw[k, j] = x[i, k]; the Jacobian written out by hand
    jac = np.zeros((6, 9))
    for i in range(2):
        for j in range(3):
            for k in range(3):
                jac[i * 3 + j, k * 3 + j] = x[i, k]
    swapped = jac[:, [k * 3 + j for j in range(3) for k in range(3)]]
    tol = np.full((6, 9), 1e-9)
    assert "n x n entries transposed" in diagnose(jac, swapped, tol, "reverse", False, False)
    assert diagnose(jac, 2 * jac, tol, "reverse", False, False).startswith("analytical is 2")


def test_a_reduction_over_the_wrong_axis_is_diagnosed_as_coupling(run_json):
    result, doc = run_json("check", f"{FIRST_HOUR}:RowSoftmaxWrongAxis", "--inputs",
                           "randn(3, 4)", "--check", "reverse")
    assert result.exit_code == 1
    # a row softmax of a 3 x 4 input: 3 * 4 * 4 entries couple within rows, the other
    # 144 - 48 = 96 are zero; the wrong backward makes some of those nonzero
    (reverse,) = doc["results"]
    found = re.search(r"analytical couples (\d+) \(output, input\) entries", reverse["diagnosis"])
    assert found and 0 < int(found.group(1)) <= 96


def test_a_sign_flipped_term_is_diagnosed_and_one_wrong_entry_is_not_taken_for_it():
    from adcheck.gradcheck.verdict.diagnosis import diagnose
    y = np.array([0.1, 0.2, 0.3, 0.4])
    softmax = np.diag(y) - np.outer(y, y)        # d softmax / dx, written out
    tol = np.full((4, 4), 1e-9)
    cross = diagnose(softmax, np.diag(y) + np.outer(y, y), tol, "reverse", False, False)
    assert "sign of its cross (non-diagonal) term flipped" in cross
    diagonal = diagnose(softmax, -np.diag(y) - np.outer(y, y), tol, "reverse", False, False)
    assert "sign of its diagonal (elementwise) term flipped" in diagonal
    one_entry = diagnose(softmax, softmax + np.diag([0, 0.3, 0, 0]), tol, "reverse", False,
                         False)
    assert "flipped" not in one_entry


def test_a_softmax_backward_adding_its_cross_term_is_diagnosed_on_the_command_line(run_json):
    result, doc = run_json("check", f"{FIRST_HOUR}:RowSoftmaxSignFlip", "--inputs",
                           "randn(3, 4)", "--check", "reverse")
    assert result.exit_code == 1
    assert "cross (non-diagonal) term flipped" in doc["results"][0]["diagnosis"]


def test_a_wrong_value_where_an_elementwise_function_is_flat_is_not_called_coupling():
    from adcheck.gradcheck.verdict.diagnosis import diagnose
    x = np.array([-1.0, 2.0, -3.0, 4.0])
    relu = np.diag((x > 0).astype(float))       # d relu / dx, written out
    tol = np.full((4, 4), 1e-9)
    ones = diagnose(relu, np.eye(4), tol, "reverse", False, False)   # 1 below 0 too
    assert ones is not None and "couples" not in ones
    # a wrong axis that couples off the diagonal is still named
    assert "couples" in diagnose(relu, relu + 0.5, tol, "reverse", False, False)


def test_a_mask_against_a_difference_across_its_edge_is_not_called_rounding():
    from adcheck.gradcheck.verdict.diagnosis import diagnose
    # clamp's bounds tied (op_db's explore pass): the central difference across
    # the kink is the mean of the one-sided slopes 0 and 1, AD a whole 0 or 1
    numerical = np.diag([1.0, 0.5, 0.0, 1.0])
    tol = np.full((4, 4), 1e-9)
    found = diagnose(numerical, np.diag([1.0, 0.0, 0.0, 1.0]), tol, "reverse", False, False)
    assert found is not None and "whole numbers" not in found
    # a derivative rounded to whole numbers still is
    rounded = diagnose(np.diag([1.3, 0.7, 2.2, 1.0]), np.diag([1.0, 1.0, 2.0, 1.0]), tol,
                       "reverse", False, False)
    assert "whole numbers" in rounded
