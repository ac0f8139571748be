"""Saved tensors: _saved_* attributes, SavedTensor hooks, default hooks."""
from __future__ import annotations

import threading

import pytest

from adcheck.conformance.case import MECHANICS, case


def _counting_hooks():
    calls = {"pack": 0, "unpack": 0}

    def pack(t):
        calls["pack"] += 1
        return t

    def unpack(t):
        calls["unpack"] += 1
        return t
    return calls, pack, unpack


@case("In the previous code, y.grad_fn._saved_self refers to the same Tensor object as x.",
      source=MECHANICS)
def saved_input_is_the_same_object(E):
    x = E.randn(5, requires_grad=True)
    y = x.pow(2)
    assert x.equal(y.grad_fn._saved_self)
    assert x is y.grad_fn._saved_self


@case("Here, the tensor you get from accessing y.grad_fn._saved_result is a different "
      "tensor object than y (but they still share the same storage).", source=MECHANICS)
def saved_output_is_a_new_object_sharing_storage(E):
    x = E.randn(5, requires_grad=True)
    y = x.exp()
    saved = y.grad_fn._saved_result
    assert y.equal(saved)
    assert y is not saved
    with E.no_grad():
        saved.mul_(0)
    assert y.tolist() == [0.0] * 5


@case("You can explore (for educational or debugging purposes) which tensors are saved by "
      "a certain grad_fn by looking for its attributes starting with the prefix _saved.",
      source=MECHANICS)
def saved_attributes_name_what_the_rule_uses(E):
    x = E.randn(3, requires_grad=True)
    w = E.randn(3, requires_grad=True)
    y = x * w
    assert y.grad_fn._saved_self is x and y.grad_fn._saved_other is w
    names = [n for n in dir(y.grad_fn) if n.startswith("_saved_")]
    assert "_saved_self" in names and "_saved_other" in names


@case("The pack_hook method is called as soon as the pair is registered. The unpack_hook "
      "method is called each time the saved tensor needs to be accessed, either by means "
      "of y.grad_fn._saved_self or during the backward pass.", source=MECHANICS)
def register_hooks_packs_once_unpacks_per_access(E):
    calls, pack, unpack = _counting_hooks()
    x = E.randn(5, requires_grad=True)
    y = x.pow(2)
    y.grad_fn._raw_saved_self.register_hooks(pack, unpack)
    assert calls == {"pack": 1, "unpack": 0}
    y.grad_fn._saved_self
    y.grad_fn._saved_self
    assert calls == {"pack": 1, "unpack": 2}
    y.sum().backward()
    assert calls == {"pack": 1, "unpack": 3}
    assert x.grad.equal(2 * x.detach())


@case("The pack_hook function should take a tensor as its single argument but can return "
      "any python object (e.g. another tensor, a tuple, or even a string containing a "
      "filename).", source=MECHANICS)
def pack_hook_may_return_any_object(E):
    store = {}

    def pack(t):
        key = f"slot-{len(store)}"
        store[key] = t.tolist()
        return key

    def unpack(key):
        return E.tensor(store[key])
    x = E.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with E.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = x.pow(3)
    assert "slot-0" in store        # the saved input x, packed as a key
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 12.0, 27.0]


@case("The tensor returned by unpack_hook only needs to have the same content as the "
      "tensor passed as input to pack_hook. In particular, any autograd-related metadata "
      "can be ignored as they will be overwritten during unpacking.", source=MECHANICS)
def unpacked_tensor_only_needs_the_content(E):
    x = E.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    y.grad_fn._raw_saved_result.register_hooks(lambda t: t.tolist(),
                                               lambda data: E.tensor(data))
    saved = y.grad_fn._saved_result
    assert saved.tolist() == y.tolist()
    y.sum().backward()
    assert x.grad.tolist() == y.tolist()


@case("If you maintain a reference to a SavedTensor after the saved tensors have been "
      "released (i.e. after backward has been called), calling its register_hooks is "
      "forbidden. PyTorch will throw an error most of the time", source=MECHANICS)
def register_hooks_after_release_raises(E):
    x = E.randn(5, requires_grad=True)
    y = x.pow(2)
    raw = y.grad_fn._raw_saved_self
    y.sum().backward()
    with pytest.raises(RuntimeError, match="after it has been freed"):
        raw.register_hooks(lambda t: t, lambda t: t)
    with pytest.raises(RuntimeError, match="after they have already been freed"):
        y.grad_fn._saved_self


@case("We guarantee that pack_hook will only be called once but unpack_hook can be called "
      "as many times as the backward pass requires it and we expect it to return the same "
      "data each time.", source=MECHANICS)
def unpack_runs_for_every_backward(E):
    calls, pack, unpack = _counting_hooks()
    x = E.tensor([2.0], requires_grad=True)
    with E.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = x.sin()
    assert calls == {"pack": 1, "unpack": 0}
    y.backward(retain_graph=True)
    y.backward()
    assert calls == {"pack": 1, "unpack": 2}
    assert x.grad.tolist() == (2 * E.cos(x.detach())).tolist()


@case("you can use the context-manager saved_tensors_hooks to register a pair of hooks "
      "which will be applied to all saved tensors that are created in that context.",
      source=MECHANICS)
def default_hooks_apply_to_every_saved_tensor_inside(E):
    packed = []
    x = E.randn(3, requires_grad=True)
    w = E.randn(3, requires_grad=True)
    with E.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
        y = x * w
        z = y.exp()
    assert len(packed) == 3
    x.pow(2)
    assert len(packed) == 3
    z.sum().backward()
    assert x.grad.equal(w.detach() * z.detach())


@case("The hooks defined with this context manager are thread-local.", source=MECHANICS)
def default_hooks_are_thread_local(E):
    packed, errors = [], []
    x = E.randn(3, requires_grad=True)

    def other_thread():
        try:
            y = x.pow(2)
            assert y.grad_fn._saved_self is x
        except BaseException as exc:  # noqa: BLE001 - reported to the main thread
            errors.append(exc)
    with E.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
        worker = threading.Thread(target=other_thread)
        worker.start()
        worker.join(timeout=10)
        x.pow(2)
    assert not worker.is_alive() and not errors, errors
    assert len(packed) == 1


@case("you can use the context-manager saved_tensors_hooks to register a pair of hooks "
      "which will be applied to all saved tensors that are created in that context.",
      source=MECHANICS)
def default_hooks_nest_innermost_wins(E):
    log = []
    x = E.randn(3, requires_grad=True)
    outer = E.autograd.graph.saved_tensors_hooks(lambda t: log.append("outer") or t,
                                                 lambda t: t)
    inner = E.autograd.graph.saved_tensors_hooks(lambda t: log.append("inner") or t,
                                                 lambda t: t)
    with outer:
        x.sin()
        with inner:
            x.sin()
        x.sin()
    x.sin()
    assert log == ["outer", "inner", "outer"]


@case("Without the hooks, x, y.grad_fn._saved_self and y.grad_fn._saved_other all refer "
      "to the same tensor object. With the hooks, PyTorch will pack and unpack x into two "
      "new tensor objects that share the same storage with the original x (no copy "
      "performed).", source=MECHANICS)
def hooks_create_new_objects_sharing_storage(E):
    x = E.randn(5, requires_grad=True)
    y = x * x
    assert y.grad_fn._saved_self is x and y.grad_fn._saved_other is x
    with E.autograd.graph.saved_tensors_hooks(lambda t: t.detach(), lambda t: t):
        x = E.randn(5, requires_grad=True)
        y = x * x
    a, b = y.grad_fn._saved_self, y.grad_fn._saved_other
    assert a is not x and b is not x and a is not b
    assert a.equal(x) and b.equal(x)
    with E.no_grad():
        x.add_(1)
    assert a.equal(x) and b.equal(x)


@case("PyTorch will throw an error if the input to a pack hook is modified inplace",
      source=MECHANICS)
def pack_hook_modifying_its_input_raises(E):
    def pack(t):
        t.add_(1)
        return t
    x = E.ones(3, requires_grad=True)
    z = x * 1
    with E.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with pytest.raises(RuntimeError, match="pack hook is modifying its input in place"):
            z.sin()


@case("you can use the context-manager saved_tensors_hooks to register a pair of hooks "
      "which will be applied to all saved tensors that are created in that context.",
      source=MECHANICS)
def disable_saved_tensors_hooks_forbids_registration(E):
    graph = E.autograd.graph
    with graph.disable_saved_tensors_hooks("saved tensor hooks are off here"):
        with pytest.raises(RuntimeError, match="saved tensor hooks are off here"):
            with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
        y = E.ones(2, requires_grad=True).exp()
    y.sum().backward()
    with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        E.ones(2, requires_grad=True).exp()
