"""Index tensors are saved tensors.

Advanced indexing (index tensors, lists, boolean masks) and ``index_put``
keep their indices for backward. PyTorch saves them like any tensor a
backward needs: checked against their version, freed after backward.
"""
from __future__ import annotations

import pytest

from adcheck.conformance.case import MECHANICS, case

_SECOND = "backward through the graph a second time"


def _x(E):
    return E.arange(6.0, dtype=E.float64).reshape(2, 3).requires_grad_()


@case("When a Function saves any tensors for backward, a version counter of their "
      "containing Tensor is saved as well.", source=MECHANICS)
def modified_index_tensor_is_detected(E):
    x = _x(E)
    i = E.tensor([0, 1])
    y = x[i]
    i.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*is at version 1; "
                                           "expected version 0 instead"):
        y.sum().backward()
    z = x.clone()
    j = E.tensor([0])
    z.index_put_((j,), E.tensor(5.0, dtype=E.float64))
    j.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


@case("Autograd will error out to the user similar to what call backward() twice with out "
      "retain_graph=True, and let the user know they should use retain_graph=True.",
      source=MECHANICS)
def saved_indices_are_freed_after_backward(E):
    x = _x(E)
    makers = [lambda: x[:, E.tensor([0, 1, 1])], lambda: x[x > 2], lambda: x[[0, 1]],
              lambda: x.clone().index_put((E.tensor([1]),), E.tensor(7.0, dtype=E.float64))]
    for make in makers:
        y = make()
        y.sum().backward()
        with pytest.raises(RuntimeError, match=_SECOND):
            y.sum().backward()
    z = x.clone()
    z[E.tensor([0])] = 5.0
    z.sum().backward()
    with pytest.raises(RuntimeError, match=_SECOND):
        z.sum().backward()


@case("You can explore (for educational or debugging purposes) which tensors are saved by a "
      "certain grad_fn by looking for its attributes starting with the prefix _saved.",
      source=MECHANICS)
def saved_indices_are_readable_until_freed(E):
    x = _x(E)
    y = x[E.tensor([1, 0])]
    assert [t.tolist() for t in y.grad_fn._saved_indices if t is not None] == [[1, 0]]
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    assert x.grad.tolist() == [[2.0] * 3, [2.0] * 3]
    with pytest.raises(RuntimeError, match=_SECOND):
        y.grad_fn._saved_indices


@case("Some operations need intermediary results to be saved during the forward pass in "
      "order to execute the backward pass.", source=MECHANICS)
def python_list_index_is_read_once(E):
    # the list becomes a tensor when indexing: changing the list afterwards changes nothing
    x = _x(E)
    index = [0, 0]
    y = x[index]
    index[0] = 1
    y.sum().backward()
    assert x.grad.tolist() == [[2.0] * 3, [0.0] * 3]
