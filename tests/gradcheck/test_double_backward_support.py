"""Second order of a Function that has no double backward, told apart from a
wrong second derivative.

A backward computed outside autograd (NumPy), or marked
``@once_differentiable``, builds no graph: torch refuses to differentiate it
again ("appears to not have been used in the graph"). A backward that builds a
graph with a piece detached (a SiLU that saves ``sigmoid(x)`` without its graph)
has a second derivative, and a wrong one: finite differences of its own
first derivative show it.
"""
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from torch.autograd.function import once_differentiable  # noqa: E402

from adcheck.gradcheck import check  # noqa: E402
from adcheck.gradcheck.api import NO_DOUBLE_BACKWARD, lacks_double_backward  # noqa: E402
from adcheck.gradcheck.errors import GradcheckError, NoDoubleBackward  # noqa: E402

sys.path.insert(0, str(Path(__file__).parents[1] / "cli" / "fixtures"))
# NumpyGradSin's backward calls grad.numpy(): it raises when asked for a graph
from second_order import DetachedSiLU, SiLU  # noqa: E402
from second_order import NumpySin as NumpyGradSin  # noqa: E402


class NumpySin(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.from_numpy(np.sin(x.detach().numpy()))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * torch.from_numpy(np.cos(x.detach().numpy()))


class OnceSin(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.cos()


def _x():
    return torch.tensor([-1.5, -0.3, 0.4, 2.0], dtype=torch.float64, requires_grad=True)


@pytest.mark.parametrize("function", [NumpySin, OnceSin])
def test_no_graph_is_named_as_no_double_backward(function):
    x = _x()
    (first,) = torch.autograd.grad(function.apply(x), x, torch.ones(4, dtype=torch.float64),
                                   create_graph=True)
    # torch's own verdict: the first derivative is not a function of x to autograd
    if first.requires_grad:
        with pytest.raises(RuntimeError, match="not have been used in the graph"):
            torch.autograd.grad(first.sum(), x)
    report = check(function.apply, (_x(),), order=2, precise=True)
    assert not report.passed and report.double_backward is False
    assert lacks_double_backward(report)
    assert report.diagnosis == NO_DOUBLE_BACKWARD


def test_backward_that_raises_with_a_graph_is_no_double_backward():
    with pytest.raises(GradcheckError) as caught:
        check(NumpyGradSin.apply, (_x(),), order=2)
    assert isinstance(caught.value.__cause__, NoDoubleBackward)
    assert "requires grad" in str(caught.value.__cause__.__cause__)


def test_detached_piece_is_a_wrong_second_derivative():
    report = check(DetachedSiLU.apply, (_x(),), order=2, precise=True)
    assert not report.passed and report.double_backward is True
    assert not lacks_double_backward(report)
    # independent: central differences of the backward itself against its autograd
    x = _x().detach()
    h = 1e-5
    def first(v):
        v = v.clone().requires_grad_()
        return torch.autograd.grad(DetachedSiLU.apply(v).sum(), v, create_graph=True)[0]
    numerical = (first(x + h) - first(x - h)).detach() / (2 * h)
    v = x.clone().requires_grad_()
    autograd = torch.autograd.grad(first(v).sum(), v)[0]
    assert not torch.allclose(numerical, autograd, rtol=1e-4, atol=1e-6)


def test_correct_double_backward_passes_and_linear_is_not_called_missing():
    assert check(SiLU.apply, (_x(),), order=2, precise=True).passed
    report = check(lambda x: 3 * x + 1, (_x(),), order=2, precise=True)
    assert report.passed and not lacks_double_backward(report)
