"""Grad modes: no-grad, enable-grad, inference mode; requires_grad under them."""
from __future__ import annotations

import threading

import pytest

from adcheck.conformance.case import AUTOGRAD_NOTE, MECHANICS, case


@case("Computations in no-grad mode behave as if none of the inputs require grad. In "
      "other words, computations in no-grad mode are never recorded in the backward "
      "graph even if there are inputs that have require_grad=True.", source=MECHANICS)
def no_grad_records_nothing(E):
    x = E.ones(2, requires_grad=True)
    with E.no_grad():
        assert E.is_grad_enabled() is False
        y = x * 2
        z = x.exp().sum()
    assert E.is_grad_enabled() is True
    for t in (y, z):
        assert t.requires_grad is False and t.grad_fn is None and t.is_leaf


@case("Enable no-grad mode when you need to perform operations that should not be "
      "recorded by autograd, but you'd still like to use the outputs of these "
      "computations in grad mode later.", source=MECHANICS)
def no_grad_results_usable_later(E):
    x = E.tensor([1.0, 2.0], requires_grad=True)
    with E.no_grad():
        scale = x * 3
    assert scale.is_inference() is False
    w = E.tensor([5.0, 7.0], requires_grad=True)
    (scale * w * x).sum().backward()
    assert w.grad.tolist() == [3.0, 12.0]
    assert x.grad.tolist() == [15.0, 42.0]


@case("The second construct is the function decorator torch.no_grad() (it can also be "
      "used as a context manager).", source=AUTOGRAD_NOTE)
def no_grad_as_decorator(E):
    @E.no_grad()
    def f(x):
        assert not E.is_grad_enabled()
        return x * 2
    x = E.ones(2, requires_grad=True)
    y = f(x)
    assert not y.requires_grad and E.is_grad_enabled()


@case("default mode (grad mode), no-grad mode, and inference mode, all of which can be "
      "togglable via context managers and decorators.", source=MECHANICS)
def enable_grad_and_set_grad_enabled(E):
    x = E.ones(2, requires_grad=True)
    with E.no_grad():
        with E.enable_grad():
            assert E.is_grad_enabled()
            y = x * 2
        z = x * 2
    assert y.requires_grad and not z.requires_grad
    with E.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    with E.set_grad_enabled(True):
        assert (x * 2).requires_grad

    @E.enable_grad()
    def g(t):
        return t * 2
    with E.no_grad():
        assert g(x).requires_grad


@case("The most important thing to know about the default mode is that it is the only "
      "mode in which requires_grad takes effect. requires_grad is always overridden to be "
      "False in both the two other modes.", source=MECHANICS)
def requires_grad_only_takes_effect_in_grad_mode(E):
    x = E.ones(2, requires_grad=True)
    with E.no_grad():
        a = x + 1
    with E.inference_mode():
        b = x + 1
    c = x + 1
    assert (a.requires_grad, b.requires_grad, c.requires_grad) == (False, False, True)


@case("tensors created in inference mode will not be able to be used in computations to "
      "be recorded by autograd after exiting inference mode.", source=MECHANICS)
def inference_tensor_cannot_be_saved_for_backward(E):
    with E.inference_mode():
        assert E.is_inference_mode_enabled()
        data = E.ones(3) * 2
    assert not E.is_inference_mode_enabled()
    assert data.is_inference() and not data.requires_grad
    w = E.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        w * data
    y = w * data.clone()
    y.sum().backward()
    assert w.grad.tolist() == [2.0, 2.0, 2.0]


@case("If you run into errors after enabling inference mode, check that you are not "
      "using tensors created in inference mode in computations that are recorded by "
      "autograd after exiting inference mode.", source=MECHANICS)
def inference_tensor_inplace_outside_raises(E):
    with E.inference_mode():
        t = E.zeros(2)
        t.add_(1)
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside "
                                           "InferenceMode is not allowed"):
        t.add_(1)
    normal = t.clone()
    assert not normal.is_inference()
    normal.add_(1)


@case("If you cannot avoid such use in your case, you can always switch back to no-grad "
      "mode.", source=MECHANICS)
def inference_mode_false_and_no_grad_tensors_are_normal(E):
    with E.inference_mode():
        with E.inference_mode(False):
            normal = E.ones(2)
        inferred = E.ones(2)
    with E.no_grad():
        nograd = E.ones(2)
    assert not normal.is_inference() and inferred.is_inference()
    assert not nograd.is_inference()
    w = E.ones(2, requires_grad=True)
    (w * normal * nograd).sum().backward()
    assert w.grad.tolist() == [1.0, 1.0]


@case("Inference mode is the extreme version of no-grad mode. Just like in no-grad mode, "
      "computations in inference mode are not recorded in the backward graph",
      source=MECHANICS)
def inference_mode_records_nothing(E):
    x = E.ones(2, requires_grad=True)
    with E.inference_mode():
        assert not E.is_grad_enabled()
        y = x * 2
    assert y.grad_fn is None and not y.requires_grad and y.is_inference()
    assert E.is_grad_enabled()

    @E.inference_mode()
    def f(t):
        return t * 3
    assert f(x).is_inference()


@case("Grad Modes ... all of which can be togglable via context managers and decorators.",
      source=MECHANICS)
def grad_mode_is_thread_local(E):
    seen, errors = [], []
    x = E.ones(2, requires_grad=True)

    def worker():
        try:
            seen.append((E.is_grad_enabled(), (x * 2).requires_grad))
        except BaseException as exc:  # noqa: BLE001 - reported to the main thread
            errors.append(exc)
    with E.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join(timeout=10)
    assert not t.is_alive() and not errors, errors
    assert seen == [(True, True)]


@case("Setting requires_grad should be the main way you control which parts of the model "
      "are part of the gradient computation", source=MECHANICS)
def leaf_created_under_no_grad_keeps_its_flag(E):
    with E.no_grad():
        w = E.ones(2, requires_grad=True)
    assert w.requires_grad and w.is_leaf
    (w * 3).sum().backward()
    assert w.grad.tolist() == [3.0, 3.0]
