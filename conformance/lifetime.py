"""What the graph keeps alive: nothing that holds it back.

A tensor holds its ``grad_fn``; whatever the node needs of that tensor
(a retained gradient, a saved output, a dirty input) it holds weakly or
packed, so that dropping the last reference frees the tensor at once, by
reference counting, without waiting for the cycle collector.
"""
from __future__ import annotations

import gc
import weakref

from adcheck.conformance.case import MECHANICS, TORCH_BEHAVIOUR, case


def _freed_at_once(make) -> bool:
    """Whether the tensors ``make()`` returns die when their last reference goes,
    with the cycle collector off (PyTorch's graph has no reference cycles)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        objects = make()
        refs = [weakref.ref(o) for o in objects]
        del objects
        return all(r() is None for r in refs)
    finally:
        if enabled:
            gc.enable()


@case("Under the hood, to prevent reference cycles, PyTorch has packed the tensor upon saving "
      "and unpacked it into a different tensor for reading.", source=MECHANICS)
def saved_outputs_do_not_keep_tensors_alive(E):
    def exp_on_view():
        base = E.ones(4, requires_grad=True) * 1
        view = base[:2]
        view.exp_()
        return [base, view]

    def exp():
        y = E.ones(2, requires_grad=True).exp()
        return [y, y[:1]]
    assert _freed_at_once(exp_on_view)
    assert _freed_at_once(exp)


@case("retain_grad holds its tensor weakly: a non-leaf (or view) that retains its grad is "
      "freed as soon as it is dropped, before or after backward and after an in-place write",
      source=TORCH_BEHAVIOUR)
def retain_grad_does_not_keep_tensors_alive(E):
    def retained():
        y = E.ones(2, requires_grad=True) * 2
        y.retain_grad()
        return [y]

    def retained_used():
        y = E.ones(2, requires_grad=True) * 2
        y.retain_grad()
        y.sum().backward()
        return [y]

    def retained_view_written():
        base = E.ones(4, requires_grad=True) * 1
        view = base[:2]
        view.retain_grad()
        view.mul_(2)
        return [base, view]
    assert _freed_at_once(retained)
    assert _freed_at_once(retained_used)
    assert _freed_at_once(retained_view_written)


@case("a custom Function that modifies an input (or a view) in place and saves it for "
      "backward does not keep it alive: the saved dirty tensor is held as an output",
      source=TORCH_BEHAVIOUR)
def dirty_saved_inputs_do_not_keep_tensors_alive(E):
    class Double(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            ctx.save_for_backward(x)
            return x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2

    def dirty_view():
        base = E.ones(4, requires_grad=True) * 1
        view = base[:2]
        return [base, view, Double.apply(view)]

    def dirty():
        base = E.ones(4, requires_grad=True) * 1
        return [base, Double.apply(base)]
    assert _freed_at_once(dirty_view)
    assert _freed_at_once(dirty)
    base = E.ones(4, dtype=E.float64, requires_grad=True)
    y = base * 1
    out = Double.apply(y[:2])
    (out * out).sum().backward()
    assert base.grad.tolist() == [8.0, 8.0, 0.0, 0.0]
