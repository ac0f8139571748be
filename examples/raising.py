"""User code that raises (issue 28, item 8): its traceback, its frames only."""
import adcheck.refengine as E
from adcheck.refengine.autograd import Function


def _helper(x):
    return x.reshape(7, 7)   # the input has 12 entries: raises


def reshapes_wrongly(x):
    """Raises in the forward, two frames deep in this file."""
    return _helper(x) * 2


class UnfinishedBackward(Function):
    """Its forward runs; its backward raises."""

    @staticmethod
    def forward(ctx, x):
        return E.sin(x)

    @staticmethod
    def backward(ctx, grad):
        raise ValueError("my backward is unfinished")
