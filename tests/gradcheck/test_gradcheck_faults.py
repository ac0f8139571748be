"""Faults of the function named for what they are, and no false alarm on
correct formulas at the points that used to raise one (issues 14 and 18).

Each case is cross-checked against something gradcheck does not compute:
NumPy's values of the function and its derivative, or PyTorch's own
gradcheck.
"""
from __future__ import annotations

import numpy as np
import pytest

from adcheck.gradcheck import check
from gradcheck_support import function

X = np.array([0.3, -0.7, 1.2])


def leaf(E, values=X, dtype=None):
    return E.tensor(np.asarray(values), dtype=dtype or E.float64, requires_grad=True)



def first(report):
    assert not report.passed
    return report.failures[0]


# --- NaN and inf: their own messages, naming the side ------------------------

def test_an_infinite_output_is_named_not_called_nondeterministic(E):
    f = lambda x: x * float("inf")  # noqa: E731
    assert np.isinf(f(leaf(E)).detach().numpy()).all()
    report = check(f, (leaf(E),), seed=0)
    failure = first(report)
    assert failure.check == "nonfinite-output", report.message()
    assert "output 0 is inf at [0]" in failure.diagnosis
    assert not any(r.check == "reentrant" for r in report.failures), report.message()


def test_a_nan_backward_is_named_with_the_finite_differences_beside_it(E):
    f = function(E, E.sin, lambda x, g: g * float("nan"))
    report = check(f, (leaf(E),), seed=0)
    failure = first(report)
    assert (failure.check, failure.mode) == ("nonfinite", "reverse"), report.message()
    assert "the vjp returns NaN at 9 of 9 entries, first at [0, 0]" in failure.diagnosis
    assert f"finite differences give {np.cos(X[0]):.6g}" in failure.diagnosis
    assert "reentrant" not in report.message()


def test_finite_differences_that_leave_the_domain_are_named_as_such(E):
    # sqrt at 1e-7: the step eps=1e-6 leaves its domain; torch's gradcheck fails too
    x = leaf(E, [1e-7, 0.5])
    report = check(E.sqrt, (x,), seed=0)
    failure = first(report)
    assert (failure.check, failure.mode) == ("nonfinite", "numerical"), report.message()
    assert "finite differences give NaN at 1 of 4 entries, first at [0, 0]" in failure.diagnosis
    assert "within a step of the given inputs" in failure.diagnosis


def test_nan_in_the_jacobian_leaves_the_other_tolerances_finite(E):
    # a NaN entry once made the scaling tolerance NaN: every entry failed
    f = function(E, E.sin, lambda x, g: g * E.cos(x) / (x - float(X[1])) * (x - float(X[1])))
    report = check(f, (leaf(E),), seed=0)
    scaling = [r for r in report.results if r.check == "scaling"]
    assert scaling and all(r.passed for r in scaling), report.message()
    assert [r.check for r in report.failures][:1] == ["nonfinite"]


# --- a function that changes its input, or its forward from call to call -------

def test_an_input_changed_in_place_under_no_grad_fails_saying_so(E):
    def mutates(x):
        with E.no_grad():
            x.add_(1.0)
        return E.sin(x)
    report = check(mutates, (leaf(E),), seed=0)
    failure = first(report)
    assert (failure.check, failure.in_idx) == ("input-mutation", 0), report.message()
    assert "the function changed input 0 in place" in failure.diagnosis
    assert "by 1.0e+00" in failure.diagnosis


def test_a_backward_that_changes_its_saved_input_fails_saying_so(E):
    def backward(x, g):
        grad = g * E.cos(x)
        with E.no_grad():
            x.mul_(2.0)
        return grad
    report = check(function(E, E.sin, backward), (leaf(E),), seed=0)
    failure = first(report)
    assert failure.check == "input-mutation", report.message()
    assert "the backward changed input 0 in place" in failure.diagnosis


def test_a_buffer_the_function_updates_is_not_a_fault(E):
    # batch norm's running statistics: an input that does not require grad
    def with_buffer(x, running):
        with E.no_grad():
            running.mul_(0.9).add_(0.1 * x.detach())
        return E.sin(x)
    buffer = E.tensor(np.zeros(3), dtype=E.float64)
    assert check(with_buffer, (leaf(E), buffer), seed=0).passed


@pytest.mark.parametrize("fast", [False, True])
def test_a_nondeterministic_forward_is_detected_and_named(E, fast):
    rng = np.random.default_rng()
    f = lambda x: E.sin(x) + float(rng.normal()) * 1e-3  # noqa: E731
    report = check(f, (leaf(E),), seed=0, fast_mode=fast)
    failure = first(report)
    assert failure.check == "deterministic", report.message()
    assert "nondeterministic forward" in failure.diagnosis


def test_a_forward_that_changes_after_its_first_call_is_nondeterministic(E):
    # the check's first evaluation is one of the two it compares; one that draws
    # afresh from the second call on is caught as well as one that draws every time
    calls = [0]

    def drifting(x):
        calls[0] += 1
        return E.sin(x) + 1e-3 * calls[0]
    failure = first(check(drifting, (leaf(E),), seed=0, explore=False))
    assert failure.check == "deterministic"
    assert "nondeterministic forward" in failure.diagnosis


def test_a_first_call_that_differs_only_by_grad_mode_is_not_nondeterminism(E):
    # the first evaluation runs with grad enabled on the caller's tensors, the
    # others under no_grad: a difference there is judged between two calls made alike
    def grad_aware(x):
        return E.sin(x) + (1e-3 if E.is_grad_enabled() else 0.0)
    report = check(grad_aware, (leaf(E),), seed=0, explore=False)
    assert "deterministic" not in {r.check for r in report.failures}, report.message()


def test_a_backward_that_changes_from_call_to_call_is_nondeterministic_to_gradgrad(E):
    # a second-order check evaluates the first derivative twice; on refengine the
    # second call computes its values without their graph (the same bits when the
    # backward is deterministic), and a difference is then judged between two
    # calls made alike: a drifting backward is still caught, a steady one passes
    calls = [0]

    def drifting(x, g):
        calls[0] += 1
        return g * E.cos(x) + 1e-3 * calls[0]
    failure = first(check(function(E, E.sin, drifting), (leaf(E),), order=2, seed=0,
                          explore=False))
    assert failure.check == "deterministic"
    assert "first derivative evaluated twice" in failure.diagnosis
    assert check(E.sin, (leaf(E),), order=2, seed=0, explore=False).passed


# --- integer-valued gradients -------------------------------------------------

def test_a_rounded_gradient_is_diagnosed_as_whole_numbers(E):
    f = function(E, lambda x: 3 * E.sin(x), lambda x, g: (3 * g * E.cos(x)).round())
    report = check(f, (leaf(E),), seed=0)
    assert "whole numbers" in report.diagnosis and "not scaled" not in report.diagnosis
    assert "rounds its result or returns an integer tensor" in report.diagnosis


def test_an_integer_tensor_gradient_is_diagnosed_and_torch_agrees_it_is_wrong():
    torch = pytest.importorskip("torch")
    f = function(torch, lambda x: 3 * torch.sin(x), lambda x, g: (3 * g * torch.cos(x)).long())
    for seed in range(3):
        report = check(f, (leaf(torch),), seed=seed)
        assert "whole numbers" in report.diagnosis, report.message()
    with pytest.raises(Exception, match="Jacobian mismatch"):
        torch.autograd.gradcheck(f, (leaf(torch),))


# --- discontinuities -----------------------------------------------------------

def staircase(E):
    """``round(x, 3) + sin(x)`` (as ``floor(1000 x + 1/2) / 1000``): derivative
    cos(x) between its jumps."""
    return lambda x: E.floor(x * 1000 + 0.5) / 1000 + E.sin(x)


def test_steps_that_straddle_a_jump_are_discarded(E):
    # each point lies closer to a jump (every 1e-3) than the first Richardson
    # step; at wide steps the staircase reads as a line of slope 1 (the first
    # three are round.decimals_3 float64 sample 0's, which failed that way)
    x = np.array([3.08424565, 1.99732539, -2.47296353, 1.2341, -0.31377, 0.50093])
    report = check(staircase(E), (leaf(E, x),), precise=True, seed=0)
    assert report.passed, report.message()
    np.testing.assert_allclose(np.diag(report.jacobians["numerical"][0, 0]), np.cos(x),
                               rtol=1e-9)


def test_a_staircase_alone_is_flat_even_where_two_wide_steps_agree(E):
    # at 0.96 the first step is 0.03: 0.06 and 0.03 of stairs over 2h give the
    # same quotient (1) at the two widest steps, as a line's would; the smallest
    # step (the sentinel) sees the flat stair, and the derivative is 0
    stairs = lambda x: E.floor(x * 1000 + 0.5) / 1000  # noqa: E731
    x = np.array([0.96, 0.64, 3.08424565, 1.99732539, -2.47296353, 1.2341])
    report = check(stairs, (leaf(E, x),), precise=True, seed=0)
    assert report.passed, report.message()
    np.testing.assert_array_equal(report.jacobians["numerical"][0, 0], np.zeros((6, 6)))


def test_a_jump_no_step_avoids_is_named_and_the_formula_is_not_blamed(E):
    x = np.array([1.2341, 0.5005 + 1e-13, -0.8123])   # a jump at 0.5005
    report = check(staircase(E), (leaf(E, x),), precise=True, seed=0)
    assert [r.check for r in report.failures] == ["discontinuous"], report.message()
    assert "first [1, 1]" in report.failures[0].diagnosis
    # a wrong formula elsewhere is still caught
    wrong = function(E, staircase(E), lambda x, g: g * 2 * E.cos(x))
    report = check(wrong, (leaf(E, x),), precise=True, seed=0)
    assert {"discontinuous", "reverse"} <= {r.check for r in report.failures}


def test_infinite_inputs_take_finite_steps(E):
    # _safe_softmax's -inf inputs: Richardson's |x|/32 step was inf, its tolerance NaN
    softmax = E.nn.functional.softmax
    x = leaf(E, [-np.inf, 0.3, -1.2, -np.inf])
    report = check(lambda t: softmax(t, dim=0), (x,), precise=True, seed=0)
    assert report.passed, report.message()
    numerical = report.jacobians["numerical"][0, 0]
    assert np.all(numerical[:, [0, 3]] == 0)


def test_reentrancy_compares_the_same_computation():
    # fast mode's one probe was compared with a batch of it and the scaling probes:
    # 28 of 40 seeds failed with "not reentrant ... differs by 2.8e-17"
    torch = pytest.importorskip("torch")
    gen = torch.Generator().manual_seed(0)
    a, b = (torch.randn(32, 32, dtype=torch.float64, generator=gen, requires_grad=True)
            for _ in range(2))
    assert torch.autograd.gradcheck(torch.matmul, (a, b), fast_mode=True)
    for seed in range(8):
        report = check(torch.matmul, (a, b), fast_mode=True, seed=seed)
        assert report.passed, report.message()


def test_a_compressed_cell_no_step_resolves_is_listed_and_reported(E):
    # elementwise: one group of columns, so cell [1, 0] holds entry [1, 1],
    # whose every step straddles the jump at 0.5005 (the others are smooth)
    x = np.array([1.2341, 0.5005 + 1e-13, -0.8123])
    report = check(staircase(E), (leaf(E, x),), precise=True, seed=0, jacobian="compressed")
    assert report.plan == "compressed"
    unresolved = report.jacobians["numerical"].unresolved
    assert unresolved is not None and set(unresolved) == {(0, 0)}
    assert unresolved[0, 0].shape == (3, 1)
    assert np.argwhere(unresolved[0, 0]).tolist() == [[1, 0]]
    assert [r.check for r in report.failures] == ["discontinuous"], report.message()
    assert "1 of 3 cells of J S, first [1, 0]" in report.failures[0].diagnosis
    assert "discontinuous" in report.message()


def test_a_jump_in_one_input_does_not_lead_a_wrong_formula_in_another():
    # nextafter(x, y) at x == y == 0: in x it moves by one ulp toward y, so its
    # slope is 1 on both sides (NumPy, below), while torch's derivative is 0;
    # in y it jumps. The wrong formula leads the report, the jump follows.
    torch = pytest.importorskip("torch")
    h = 1e-6
    assert (np.nextafter(h, 0.0) - np.nextafter(-h, 0.0)) / (2 * h) == pytest.approx(1, 1e-9)
    x, y = (torch.tensor(0.0, dtype=torch.float64, requires_grad=True) for _ in range(2))
    report = check(torch.nextafter, (x, y), precise=True, seed=0, explore=False)
    assert [(r.check, r.in_idx) for r in report.failures] == [("reverse", 0),
                                                               ("discontinuous", 1)]
    assert report.message().startswith("nextafter: reverse-mode Jacobian differs")
