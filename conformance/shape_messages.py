"""Errors that print shapes and sizes, in PyTorch's words.

A gradient of the wrong shape given to ``backward`` or ``grad``, operands
that do not broadcast, and a gradient that is not a tensor. Shapes print as
the engine's ``Size`` type does (``torch.Size([2])`` in torch,
``refengine.Size([2])`` in refengine; see docs/differences.md).
"""
from __future__ import annotations

import pytest

from adcheck.conformance.case import TORCH_BEHAVIOUR, case


def _size(E, dims) -> str:
    return f"{E.__name__.rsplit('.', 1)[-1]}.Size({list(dims)})"


def _raised(kind, action) -> str:
    with pytest.raises(kind) as info:
        action()
    return str(info.value)


@case("a grad_output whose shape differs from its output's is refused, naming both shapes as "
      "torch.Size([...]) and their positions as found by list.index",
      source=TORCH_BEHAVIOUR)
def mismatch_in_shape_prints_sizes(E):
    x = E.ones(3, requires_grad=True)

    def message(g_at, g_shape, o_at, o_shape):
        return (f"Mismatch in shape: grad_output[{g_at}] has a shape of {_size(E, g_shape)} "
                f"and output[{o_at}] has a shape of {_size(E, o_shape)}.")

    assert _raised(RuntimeError, lambda: (x * 2).backward(E.ones(2))) == message(0, [2], 0, [3])
    assert _raised(RuntimeError, lambda: E.autograd.grad(x * 2, x, E.ones(2, 2))) == \
        message(0, [2, 2], 0, [3])
    s = x.sum()
    assert _raised(RuntimeError, lambda: E.autograd.grad([s, s * 3], x, [None, E.ones(1)])) \
        == message(1, [1], 1, [])
    # list.index compares with ==: an earlier one-element tensor equal to this one is named
    assert _raised(RuntimeError, lambda: E.autograd.grad(
        [s, s * 3], x, [E.ones(()), E.ones(1)])) == message(0, [1], 1, [])
    # ... and an earlier tensor that cannot broadcast against it raises the broadcast error
    assert _raised(RuntimeError, lambda: E.autograd.grad(
        [x * 2, x * 3], x, [E.ones(3), E.ones(4)])) == (
        "The size of tensor a (3) must match the size of tensor b (4) at non-singleton "
        "dimension 0")


@case("operands that do not broadcast are refused naming the rightmost dimension whose sizes "
      "differ with neither of them 1", source=TORCH_BEHAVIOUR)
def broadcast_failure_names_sizes_and_dimension(E):
    def text(a, b, dim):
        return (f"The size of tensor a ({a}) must match the size of tensor b ({b}) at "
                f"non-singleton dimension {dim}")

    assert _raised(RuntimeError, lambda: E.ones(3) + E.ones(4)) == text(3, 4, 0)
    assert _raised(RuntimeError, lambda: E.ones(2, 3) * E.ones(4, 1, 5)) == text(3, 5, 2)
    assert _raised(RuntimeError, lambda: E.ones(2, 1) == E.ones(3, 4)) == text(2, 3, 0)
    assert _raised(RuntimeError, lambda: E.maximum(E.ones(2), E.ones(5))) == text(2, 5, 0)
    assert _raised(RuntimeError, lambda: E.where(E.ones(3) > 0, E.ones(4), E.ones(3))) == \
        text(3, 4, 0)


@case("a gradient passed to grad() or backward() that is neither a tensor nor None is a "
      "TypeError naming its type", source=TORCH_BEHAVIOUR)
def gradient_that_is_not_a_tensor_refused(E):
    x = E.ones(3, requires_grad=True)
    assert _raised(TypeError, lambda: E.autograd.grad(x.sum(), x, [2.0])) == (
        "gradients can be either Tensors or None, but got float")
    assert _raised(TypeError, lambda: x.sum().backward([2])) == (
        "gradients can be either Tensors or None, but got int")
