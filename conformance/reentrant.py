"""Reentrant backward: a backward called inside a custom Function's backward."""
from __future__ import annotations

from adcheck.conformance.case import TORCH_BEHAVIOUR, case


@case("a backward called inside a custom Function's backward (reentrant) nests 2,000 levels "
      "deep (PyTorch runs deep levels on another thread with a fresh stack)",
      source=TORCH_BEHAVIOUR)
def reentrant_backward_nests_2000_deep(E):
    class Deep(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            with E.enable_grad():
                ctx.x = x.detach().requires_grad_() - 1
            return ctx.x.detach()

        @staticmethod
        def backward(ctx, g):
            if ctx.x >= 0:
                with E.enable_grad():
                    Deep.apply(ctx.x).sum().backward()
            return g

    v = E.tensor(2000.0, requires_grad=True)
    Deep.apply(v).sum().backward()
    assert v.grad.item() == 1.0
