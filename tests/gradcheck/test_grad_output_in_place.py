"""A backward that writes into the grad_output it was handed fails the check.

Autograd may hand one gradient tensor to several Functions, or an expanded one
that cannot be written: torch itself raises on ``f(x).sum().backward()`` for
such a Function, while its gradcheck passes it. The check names the cause;
the same formula written out of place passes.
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

import adcheck.refengine as E  # noqa: E402
from adcheck.gradcheck import check  # noqa: E402
from adcheck.refengine.autograd import Function  # noqa: E402


class TorchSinInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad.mul_(x.cos())


class TorchSin(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.cos()


class RefSinInPlace(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return E.sin(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad.mul_(E.cos(x))


def _torch_input():
    return torch.tensor(np.linspace(-1.0, 1.0, 6).reshape(2, 3), requires_grad=True)


def test_torch_itself_refuses_the_in_place_backward():
    # the independent evidence that the formula is a bug, not a style
    with pytest.raises(RuntimeError, match="single memory location"):
        TorchSinInPlace.apply(_torch_input()).sum().backward()
    assert torch.autograd.gradcheck(TorchSinInPlace.apply, (_torch_input(),))


@pytest.mark.parametrize("fast_mode", [False, True])
def test_in_place_backward_fails_with_its_cause(fast_mode):
    report = check(TorchSinInPlace.apply, (_torch_input(),), fast_mode=fast_mode)
    assert not report.passed
    failure = report.failures[0]
    assert failure.check == "grad-output-mutation" and failure.out_idx == 0
    assert "grad_output" in failure.diagnosis and "grad.mul_" in failure.diagnosis


def test_out_of_place_backward_passes():
    report = check(TorchSin.apply, (_torch_input(),), precise=True, check_forward_ad=False)
    assert report.passed
    assert all(r.check != "grad-output-mutation" for r in report.results)


def test_refengine_in_place_backward_fails():
    x = E.tensor(np.linspace(-1.0, 1.0, 6).reshape(2, 3), dtype=E.float64, requires_grad=True)
    report = check(RefSinInPlace.apply, (x,))
    assert [f.check for f in report.failures][:1] == ["grad-output-mutation"]


def test_second_output_position_is_named():
    def two(x):
        return TorchSin.apply(x), TorchSinInPlace.apply(x * 2)

    report = check(two, (_torch_input(),))
    changed = [f for f in report.failures if f.check == "grad-output-mutation"]
    assert [f.out_idx for f in changed] == [1]
