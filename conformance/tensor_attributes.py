"""Tensor attributes autograd guards: numpy(), .data, .grad, requires_grad, and
the read-only ones, with the exception types torch 2.13 raises."""
from __future__ import annotations

import pytest

from adcheck.conformance.case import MECHANICS, TORCH_BEHAVIOUR, case


@case("numpy() of a tensor that requires grad is refused in grad mode and allowed under "
      "no_grad and inference_mode (it shares the memory); numpy(force=True) always works",
      source=TORCH_BEHAVIOUR)
def numpy_of_a_tensor_that_requires_grad(E):
    x = E.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that requires grad"):
        x.numpy()
    with E.no_grad():
        arr = x.numpy()
        assert (x * 2).numpy().tolist() == [2.0, 2.0]
    with E.inference_mode():
        assert x.numpy().tolist() == [1.0, 1.0]
    with E.no_grad():
        with E.enable_grad():
            with pytest.raises(RuntimeError, match="requires grad"):
                x.numpy()
    arr[0] = 5.0
    assert x.tolist() == [5.0, 1.0]
    forced = x.numpy(force=True)
    forced[1] = 7.0
    assert x.tolist() == [5.0, 7.0]


@case("Every tensor keeps a version counter, that is incremented every time it is marked "
      "dirty in any operation.", source=MECHANICS)
def data_assignment_keeps_the_version_counter(E):
    # torch: after x.data = y, x reads y's memory but keeps its own counter,
    # the one its views share; y's counter is untouched by writes through x
    x = E.zeros(3)
    view = x[:2]
    x.add_(1)
    y = E.zeros(3)
    for _ in range(3):
        y.add_(1)
    x.data = y
    assert (x._version, view._version, y._version) == (1, 1, 3)
    assert x.tolist() == [3.0, 3.0, 3.0] and view.tolist() == [1.0, 1.0]
    x.add_(1)
    assert (x._version, view._version, y._version) == (2, 2, 3)
    assert y.tolist() == [4.0, 4.0, 4.0]          # the memory is shared with y


@case("x.data = y takes y's dtype and shape; it refuses a non-tensor (TypeError) and, "
      "when x requires grad, a y that is not floating point or complex (RuntimeError)",
      source=TORCH_BEHAVIOUR)
def data_assignment_checks_the_value(E):
    x = E.ones(2, requires_grad=True)
    with pytest.raises(TypeError, match="Variable data has to be a tensor"):
        x.data = [1.0, 2.0]
    with pytest.raises(RuntimeError, match="must be floating point or complex"):
        x.data = E.ones(2, dtype=E.int64)
    x.data = E.ones(3, dtype=E.float64)
    assert x.dtype is E.float64 and tuple(x.shape) == (3,) and x.requires_grad
    x.data = E.ones(2, dtype=E.complex64)
    assert x.dtype is E.complex64
    plain = E.ones(2)
    plain.data = E.ones(2, dtype=E.int64)
    assert plain.dtype is E.int64
    with pytest.raises(RuntimeError, match="Deleting tensor data is not allowed"):
        del plain.data


@case("del x.grad sets .grad to None (also when it is already None); assigning a grad of "
      "another size or dtype raises RuntimeError, a non-tensor TypeError", source=TORCH_BEHAVIOUR)
def deleting_and_assigning_grad(E):
    x = E.ones(2, requires_grad=True)
    x.grad = E.ones(2)
    del x.grad
    assert x.grad is None
    del x.grad
    assert x.grad is None
    with pytest.raises(RuntimeError, match="attempting to assign a gradient of size"):
        x.grad = E.ones(3)
    with pytest.raises(RuntimeError, match="attempting to assign a gradient with dtype"):
        x.grad = E.ones(2, dtype=E.float64)
    with pytest.raises(TypeError, match="assigned grad expected to be a Tensor or None"):
        x.grad = [1.0, 2.0]


@case("grad_fn, is_leaf, _version, output_nr, retains_grad, shape, dtype and ndim are "
      "read-only: assigning or deleting one raises AttributeError", source=TORCH_BEHAVIOUR)
def protected_attributes_raise_attribute_error(E):
    x = E.ones(2, requires_grad=True)
    y = x * 2
    for t, name, value in ((y, "grad_fn", None), (x, "grad_fn", None), (x, "is_leaf", False),
                           (x, "_version", 3), (y, "output_nr", 1), (y, "retains_grad", True),
                           (x, "shape", (1,)), (x, "dtype", E.float64), (x, "ndim", 3)):
        with pytest.raises(AttributeError):
            setattr(t, name, value)
    for name in ("grad_fn", "is_leaf", "_version"):
        with pytest.raises(AttributeError):
            delattr(y, name)


@case("It is important to note that even though every tensor has this flag, setting it "
      "only makes sense for leaf tensors", source=MECHANICS)
def requires_grad_on_a_non_leaf_is_refused(E):
    # torch: the attribute refuses any change on a non-leaf (True included);
    # requires_grad_(True) on a non-leaf is accepted and changes nothing
    y = E.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf "
                                           "variables. If you want to use a computed"):
        y.requires_grad = False
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf "
                                           "variables.$"):
        y.requires_grad = True
    with pytest.raises(RuntimeError, match="leaf variables"):
        y.requires_grad_(False)
    assert y.requires_grad_(True) is y and y.grad_fn is not None


@case("requires_grad must be a bool: the attribute raises RuntimeError for anything else "
      "(also on del), requires_grad_() raises TypeError; an integer tensor cannot require "
      "grad", source=TORCH_BEHAVIOUR)
def requires_grad_takes_a_bool_on_a_float_tensor(E):
    x = E.ones(2)
    for value in (1, "yes", None):
        with pytest.raises(RuntimeError, match="requires_grad must be a bool"):
            x.requires_grad = value
        with pytest.raises(TypeError, match="must be bool"):
            x.requires_grad_(value)
    with pytest.raises(RuntimeError, match="requires_grad must be a bool"):
        del x.requires_grad
    ints = E.ones(2, dtype=E.int64)
    with pytest.raises(RuntimeError, match="only Tensors of floating point and complex dtype"):
        ints.requires_grad = True
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype"):
        ints.requires_grad_()
    ints.requires_grad = False
    assert not x.requires_grad


@case("During the backward pass (.backward()), only leaf tensors with requires_grad=True "
      "will have gradients accumulated into their .grad fields.", source=MECHANICS)
def leaf_set_to_not_require_grad_after_the_graph_gets_no_grad(E):
    x = E.ones(2, requires_grad=True)
    y = (x * 2).sum()
    x.requires_grad = False
    y.backward(retain_graph=True)
    assert x.grad is None
    x.requires_grad_(True)
    y.backward()
    assert x.grad.tolist() == [2.0, 2.0]
    z = (x * 3).sum()
    x.requires_grad_(False)
    with pytest.raises(RuntimeError, match="does not require grad"):
        E.autograd.grad(z, x)


@case("inference tensors have no version counter: reading _version raises RuntimeError",
      source=TORCH_BEHAVIOUR)
def inference_tensor_has_no_version(E):
    with E.inference_mode():
        t = E.ones(2)
        t.add_(1)
    with pytest.raises(RuntimeError, match="Inference tensors do not track version counter"):
        t._version
    normal = E.ones(2)
    with E.inference_mode():
        normal.add_(1)
    assert normal._version == 1


@case("Every tensor keeps a version counter, that is incremented every time it is marked "
      "dirty in any operation. When a Function saves any tensors for backward, a version "
      "counter of their containing Tensor is saved as well.", source=MECHANICS)
def increment_version_marks_a_tensor_modified(E):
    from_graph = E.autograd.graph.increment_version
    x = E.ones(2)
    from_graph(x)
    assert x._version == 1
    view = x[:1]
    from_graph(view)
    assert (x._version, view._version) == (2, 2)
    from_graph([x, view])                     # one shared counter, bumped twice
    assert x._version == 4
    with pytest.raises(RuntimeError, match="Iterable\\[Tensor\\]"):
        from_graph(3)
    with pytest.raises(RuntimeError, match="each element of the iterable to be a tensor"):
        from_graph([x, 2])
    with E.inference_mode():
        frozen = E.ones(1)
    from_graph(frozen)                        # inference tensors are skipped
    a = E.ones(2, requires_grad=True)
    b = a * 1
    c = b * b
    from_graph(b)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        c.sum().backward()
