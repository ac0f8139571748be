"""A backward that builds no graph at all is found before any Jacobian of a
second-order check, and the check is then that finding alone.

A ``@once_differentiable`` or NumPy backward has no double backward whatever
finite differences of it say. Its grad_output columns were differenced all
the same: where the backward is not exactly linear in its grad_output (an
iterative solver's stopping test, cvxpylayers' diffcp; a branch on the
gradient) they were judged "discontinuous", that failure carried no "no
double backward" diagnosis, and the check failed instead of being skipped.
Those Jacobians also cost a forward and a backward per coordinate: zuko's
UNAF spent its whole 200 s timeout there.
"""
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from torch.autograd.function import once_differentiable  # noqa: E402

from adcheck.gradcheck import check  # noqa: E402
from adcheck.gradcheck.api import NO_DOUBLE_BACKWARD, lacks_double_backward  # noqa: E402

sys.path.insert(0, str(Path(__file__).parents[1] / "cli" / "fixtures"))
from second_order import NumpyExp  # noqa: E402

#: where the backward below steps: a grad_output entry exactly here straddles it
STEP_AT = 0.25


def _stepped(grad, x):
    """cos(x) grad, plus a step of 1e-3 where grad passes ``STEP_AT`` (a stopping
    test that runs one more iteration there): not exactly linear in grad."""
    return grad * x.cos() + 1e-3 * (grad > STEP_AT)


class OnceStepped(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return _stepped(grad, x)


class NumpyStepped(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return torch.from_numpy(_stepped(grad.detach(), x.detach()).numpy())


class Counted(torch.autograd.Function):
    """sin with a ``@once_differentiable`` backward, counting its forward calls."""
    calls = 0

    @staticmethod
    def forward(ctx, x):
        Counted.calls += 1
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.cos()


def _x():
    return torch.tensor([-1.5, -0.3, 0.4, 2.0], dtype=torch.float64, requires_grad=True)


def _grad_outputs():
    return torch.tensor([0.7, STEP_AT, -0.4, 0.9], dtype=torch.float64, requires_grad=True)


@pytest.mark.parametrize("function", [OnceStepped, NumpyStepped])
def test_a_backward_stepping_in_its_grad_output_without_a_graph_has_no_double_backward(
        function):
    # the premise, independently: one-sided quotients of the stepping entry in its
    # grad_output differ by the step over h; and torch finds no graph to differentiate
    x, go, h = _x(), _grad_outputs().detach(), 1e-6
    e = torch.zeros(4, dtype=torch.float64)
    e[1] = h
    entry = [_stepped(g, x.detach())[1].item() for g in (go - e, go, go + e)]
    assert abs((entry[2] - entry[1]) / h - (entry[1] - entry[0]) / h) > 100
    (first,) = torch.autograd.grad(function.apply(x), x, _grad_outputs(), create_graph=True)
    if first.requires_grad:
        with pytest.raises(RuntimeError, match="not have been used in the graph"):
            torch.autograd.grad(first.sum(), x)
    report = check(function.apply, (_x(),), order=2, grad_outputs=(_grad_outputs(),),
                   precise=True, seed=0)
    assert not report.passed and report.double_backward is False
    assert lacks_double_backward(report)
    assert report.diagnosis == NO_DOUBLE_BACKWARD


@pytest.mark.parametrize("modes", [dict(), dict(check_forward_ad=True),
                                   dict(check_forward_ad=True, check_backward_ad=False)])
def test_no_graph_is_found_in_one_call_before_any_jacobian(modes):
    Counted.calls = 0
    x = torch.randn(6, 5, dtype=torch.float64, requires_grad=True)
    report = check(Counted.apply, (x,), order=2, precise=True, seed=0, **modes)
    assert lacks_double_backward(report) and not report.jacobians
    # the first derivative drew its grad_outputs from one call, and ran once
    assert Counted.calls <= 2 and report.counts["function"] == 1
    assert {f.mode for f in report.failures} == (
        {"reverse"} if modes.get("check_backward_ad", True) else set()) | (
        {"forward"} if modes.get("check_forward_ad") else set())


def test_a_backward_returning_a_new_tensor_is_found_first_too():
    report = check(NumpyExp.apply, (_x(),), order=2, precise=True, seed=0)
    assert lacks_double_backward(report) and report.counts["function"] == 1


def test_a_linear_function_with_a_graph_of_its_grad_output_is_checked():
    # its gradients have no graph of the inputs, but one of the grad_outputs: checked
    report = check(lambda x: 3 * x + 1, (_x(),), order=2, precise=True, seed=0)
    assert report.passed and report.jacobians and report.double_backward is None


def test_grad_outputs_that_do_not_require_grad_leave_the_check_as_it_was():
    # a linear function's gradients then have no graph at all, and are no evidence
    # of a missing double backward: the check runs (and finds nothing to check)
    go = _grad_outputs().detach()
    with pytest.raises(ValueError, match="no output requires grad"):
        check(lambda x: 3 * x + 1, (_x(),), order=2, grad_outputs=(go,), precise=True)


def test_refengines_once_differentiable_is_found_first_too():
    # refengine's delayed error raises where the graph is asked of the grad_outputs
    import adcheck.refengine as E

    class RefOnceSin(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return E.sin(x)

        @staticmethod
        @E.autograd.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * E.cos(x)

    x = E.tensor(_x().detach().numpy(), dtype=E.float64, requires_grad=True)
    report = check(RefOnceSin.apply, (x,), order=2, precise=True, seed=0)
    assert lacks_double_backward(report) and report.counts["function"] == 1


def test_a_first_derivative_that_is_zero_is_no_missing_double_backward():
    # x ** 0's first derivative is zero everywhere: refengine and torch (whose pow
    # backward returns zeros for exponent 0) build no graph for it, which is right
    # (there is nothing to differentiate), and the check says, as it did before the
    # no-graph probe, that nothing of it requires grad: a skip, not a backward at fault
    import adcheck.refengine as E
    from adcheck.gradcheck.errors import UncheckableError

    for x in (E.tensor([0.5, -1.0, 2.0], dtype=E.float64, requires_grad=True),
              torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True)):
        with pytest.raises(UncheckableError, match="no output requires grad"):
            check(lambda t: t ** 0, (x,), order=2)
    xt = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradgradcheck(lambda t: t ** 0, (xt,))   # torch: nothing wrong
