"""One-sided verdicts: no false alarm at kinks and ties, failures where the
formula leaves the bracket; and the bad inputs of issue 30."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from adcheck.gradcheck import GradcheckError, check  # noqa: E402
from adcheck.gradcheck.core.evaluation import Evaluator  # noqa: E402
from adcheck.gradcheck.core.jacobian import Jacobian  # noqa: E402
from adcheck.gradcheck.core.problem import Problem  # noqa: E402
from adcheck.gradcheck.explore import beside, brackets  # noqa: E402
from explore_zoo import ZOO  # noqa: E402


def _x(*values, grad=True):
    return torch.tensor(values, dtype=torch.float64, requires_grad=grad)


CORRECT = {
    "relu": (torch.relu, lambda: (_x(0.5, -1.2, 0.3, 2.0),)),
    "abs": (torch.abs, lambda: (_x(0.5, -1.2, 0.3, 2.0),)),
    "max": (torch.max, lambda: (_x(0.5, -1.2, 0.3, 2.0),)),
    "maximum": (torch.maximum, lambda: (_x(0.5, -1.2, 0.3), _x(0.1, 0.7, -0.4))),
    "sort": (lambda x: torch.sort(x)[0], lambda: (_x(0.5, -1.2, 0.3, 2.0),)),
}


@pytest.mark.parametrize("name", sorted(CORRECT))
def test_no_false_alarm_at_kinks_and_ties_of_torch_functions(name):
    func, inputs = CORRECT[name]
    report = check(func, inputs(), seed=0, explore=True, explore_budget=1.0)
    assert report.passed, report.message()
    tally = report.counts["explore"]
    assert tally["tried"] > 5
    if name == "relu":   # relu(0) was met and judged one-sided (central differences say 0.5)
        assert tally["kinks"] > 0


@pytest.mark.parametrize("entry", [e for e in ZOO if e.name in ("sinc", "max", "prod")],
                         ids=lambda e: e.name)
def test_the_fixed_formulas_of_the_zoo_pass(entry):
    report = check(entry.function(torch, "fixed"), entry.inputs(torch, 0), seed=0,
                   explore=True, explore_budget=1.0)
    assert report.passed, report.message()


def _judge(func, point, formula_rows):
    """The verdict for a formula Jacobian given by rows (one output)."""
    x = _x(*point)
    ev = Evaluator(Problem(func, (x,), "f", warn_precision=False))
    layout = ev.problem.layout
    jac = Jacobian("reverse", layout, {(0, 0): np.array([formula_rows], dtype=float)})
    return brackets.judge(ev, {"reverse": jac}, [0])


def test_relu_at_zero_any_subgradient_passes_and_two_fails():
    relu = lambda x: torch.relu(x).sum()
    assert _judge(relu, (0.0, 1.0), [0.0, 1.0]).verdict == "kink"
    assert _judge(relu, (0.0, 1.0), [1.0, 1.0]).verdict == "kink"
    assert _judge(relu, (0.0, 1.0), [2.0, 1.0]).verdict == "fail"
    # NaN where the function is differentiable fails; at the kink it is torch's choice
    # at a point with no derivative (its hypot(0, 0) is NaN): not differentiable here
    assert _judge(relu, (0.5, 1.0), [float("nan"), 1.0]).verdict == "fail"
    assert _judge(relu, (0.0, 1.0), [float("nan"), 1.0]).verdict == "nondiff"


def test_a_tie_summing_to_two_fails_only_along_the_joint_direction():
    top = lambda x: torch.max(x)
    # each coordinate alone: one-sided derivatives 0 and 1, and 1 lies between them
    verdict = _judge(top, (0.7, 0.7, -1.0), [1.0, 1.0, 0.0])
    assert verdict.verdict == "fail" and verdict.direction == {0: [0, 1]}
    assert (verdict.left, verdict.right, verdict.formula) == pytest.approx((1.0, 1.0, 2.0))
    assert _judge(top, (0.7, 0.7, -1.0), [0.5, 0.5, 0.0]).verdict == "kink"
    assert _judge(top, (0.7, 0.7, -1.0), [1.0, 0.0, 0.0]).verdict == "kink"


def test_a_smooth_point_with_a_right_formula_agrees():
    assert _judge(lambda x: (x ** 3).sum(), (0.5, -2.0), [0.75, 12.0]).verdict == "agree"
    assert _judge(lambda x: (x ** 3).sum(), (0.5, -2.0), [0.75, 13.2]).verdict == "fail"


def test_a_point_outside_the_domain_on_one_side_gives_no_bracket():
    assert _judge(lambda x: torch.sqrt(x).sum(), (0.0, 1.0), [0.0, 0.5]).verdict == "nondiff"


def test_points_outside_the_domain_are_skipped_and_counted():
    report = check(torch.log, (_x(0.5, 1.5, 2.0),), seed=0, explore=True, explore_budget=1.0)
    assert report.passed, report.message()
    assert report.counts["explore"]["outside_domain"] > 0


@pytest.mark.parametrize("budget", [0, -1.0, "5", float("nan"), float("inf")])
def test_a_bad_budget_is_refused(budget):
    with pytest.raises(ValueError, match="explore_budget must be a number of seconds > 0"):
        check(torch.sin, (_x(0.5),), explore=True, explore_budget=budget)


def test_a_function_that_raises_at_the_given_inputs_is_not_explored():
    def broken(x):
        raise RuntimeError("no")
    with pytest.raises(GradcheckError, match="raised RuntimeError"):
        check(broken, (_x(0.5),), explore=True, explore_budget=2.0)


def test_integer_inputs_are_not_explored():
    seen = []

    def scaled(x, n):
        seen.append(n.clone())
        return x * n

    n = torch.tensor([2, 3], dtype=torch.int64)
    report = check(scaled, (_x(0.5, 1.5), n), seed=0, explore=True, explore_budget=1.0)
    assert report.passed and report.counts["explore"]["tried"] > 0
    assert all(torch.equal(m, n) for m in seen)


def test_a_point_that_hangs_is_a_timeout_and_exploring_goes_on():
    def hangs_at_zero(x):
        while bool((x == 0).all()):
            pass
        return x * x

    report = check(hangs_at_zero, (_x(0.5, 1.5),), seed=0, explore=True, explore_budget=3.0)
    tally = report.counts["explore"]
    assert tally["timeouts"] >= 1 and tally["tried"] > tally["timeouts"]
    timeouts = [r for r in report.results if r.check == "explore-timeout"]
    assert timeouts and "tie at exact zero: input 0 [0] == input 0 [1]" in timeouts[0].detail


def test_the_same_seed_explores_the_same_points():
    entry = next(e for e in ZOO if e.name == "prod")
    runs = [check(entry.function(torch, "buggy"), entry.inputs(torch, 0), seed=5,
                  explore=True, explore_budget=4.0).counts["explore"] for _ in range(2)]
    assert runs[0]["findings"] == runs[1]["findings"]
    assert runs[0]["tried"] == runs[1]["tried"]


def test_the_quick_pass_tries_only_the_cheap_part_of_the_catalogue():
    from adcheck.gradcheck.explore.catalogue import quick
    x = _x(0.5, -1.2, 0.3)
    report = check(torch.sin, (x,), seed=0, explore="quick", explore_budget=60.0)
    cheap = len(quick({0: x.detach().numpy()}, [0]))
    assert report.passed and 0 < report.counts["explore"]["tried"] <= cheap
    entry = next(e for e in ZOO if e.name == "sinc")
    found = check(entry.function(torch, "buggy"), entry.inputs(torch, 0), seed=0,
                  explore="quick", explore_budget=60.0)
    assert not found.passed


def test_explore_takes_true_false_or_quick():
    with pytest.raises(ValueError, match="explore must be True, False or 'quick'"):
        check(torch.sin, (_x(0.5),), explore="yes")


def test_an_output_that_jumps_at_the_point_is_told_from_a_kink():
    def judged_jumps(func, point):
        x = _x(*point)
        ev = Evaluator(Problem(func, (x,), "f", warn_precision=False))
        arrays = {0: ev.problem.arrays[0].astype(float)}
        return beside.discontinuous(ev, beside.nearby(arrays, [0]), arrays, 1e-3)

    step = lambda x: (x >= 0).to(x.dtype) + x      # jumps by 1 at x[0] = 0
    assert judged_jumps(step, (0.0, 1.0)) == {0}
    assert judged_jumps(torch.relu, (0.0, 1.0)) == set()      # a kink is continuous
    assert judged_jumps(lambda x: x ** 3, (0.5, -2.0)) == set()
