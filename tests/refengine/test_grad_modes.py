"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode.

Each is a context manager and a decorator, and each is thread-local. The
expectations are the seed's ("Locally disabling gradient computation") and
torch's, checked by running the same program on torch.
"""
from __future__ import annotations

import threading

import pytest

import adcheck.refengine as E

try:
    import torch as _torch
except ImportError:  # the oracle is optional: tests that need it skip
    _torch = None




@pytest.fixture(params=["refengine", "torch"])
def M(request):
    """Both engines: the behaviour asserted is torch's, and refengine must share it."""
    if request.param == "torch":
        if _torch is None:
            pytest.skip("torch is not installed")
        return _torch
    return E


@pytest.fixture(autouse=True)
def _grad_mode_restored():
    """A test whose engine leaks a disabled grad mode cannot fail the tests after it."""
    yield
    E.set_grad_enabled(True)
    if _torch is not None:
        _torch.set_grad_enabled(True)


def test_default_mode_records_and_is_not_inference():
    assert E.is_grad_enabled() is True
    assert E.is_inference_mode_enabled() is False
    y = E.ones(2, requires_grad=True) * 2
    assert y.requires_grad and y.grad_fn is not None


# ----- no_grad ------------------------------------------------------------------

def test_no_grad_context_does_not_record_and_restores(M):
    x = M.ones(2, requires_grad=True)
    with M.no_grad():
        assert M.is_grad_enabled() is False
        y = x * 2
    assert M.is_grad_enabled() is True
    assert y.requires_grad is False and y.grad_fn is None and y.is_leaf


def test_no_grad_decorator(M):
    @M.no_grad()
    def double(t):
        """doubles"""
        assert M.is_grad_enabled() is False
        return t * 2
    y = double(M.ones(2, requires_grad=True))
    assert y.requires_grad is False
    assert M.is_grad_enabled() is True
    assert double.__name__ == "double" and double.__doc__ == "doubles"


def test_no_grad_as_a_bare_decorator(M):
    @M.no_grad
    def double(t):
        return t * 2
    assert double(M.ones(2, requires_grad=True)).requires_grad is False


def test_no_grad_decorates_a_generator_function(M):
    # each step of the generator runs in no-grad mode, the caller's mode between steps
    @M.no_grad()
    def steps(t):
        yield M.is_grad_enabled(), (t * 2).requires_grad
        yield M.is_grad_enabled(), (t * 3).requires_grad
    x = M.ones(1, requires_grad=True)
    seen = []
    for item in steps(x):
        seen.append(item)
        assert M.is_grad_enabled() is True
    assert seen == [(False, False), (False, False)]


def test_tensor_created_with_requires_grad_in_no_grad_still_requires_grad(M):
    with M.no_grad():
        leaf = M.ones(2, requires_grad=True)
    assert leaf.requires_grad and leaf.is_leaf


def test_no_grad_result_is_usable_in_grad_mode_later(M):
    x = M.tensor([1.0, 2.0], requires_grad=True)
    with M.no_grad():
        c = x * 3
    (c * x).sum().backward()
    assert x.grad.tolist() == [3.0, 6.0]        # c is a constant: d(c x)/dx = c


def test_inplace_update_of_a_leaf_is_allowed_in_no_grad(M):
    w = M.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w.sub_(1)
    with M.no_grad():
        w.sub_(1)
    assert w.tolist() == [0.0, 1.0] and w.is_leaf and w.requires_grad


def test_no_grad_restores_the_mode_after_an_exception(M):
    with pytest.raises(ValueError), M.no_grad():
        raise ValueError("boom")
    assert M.is_grad_enabled() is True


# ----- enable_grad and set_grad_enabled -----------------------------------------------

def test_enable_grad_inside_no_grad(M):
    x = M.ones(2, requires_grad=True)
    with M.no_grad():
        with M.enable_grad():
            assert M.is_grad_enabled() is True
            y = x * 2
        assert M.is_grad_enabled() is False
    assert y.grad_fn is not None


def test_enable_grad_decorator(M):
    @M.enable_grad()
    def f(t):
        return t * 2
    with M.no_grad():
        assert f(M.ones(1, requires_grad=True)).requires_grad
        assert M.is_grad_enabled() is False


def test_enable_grad_as_a_bare_decorator(M):
    @M.enable_grad
    def f(t):
        return t * 3
    with M.no_grad():
        assert f(M.ones(1, requires_grad=True)).requires_grad
        assert M.is_grad_enabled() is False


def test_set_grad_enabled_as_a_function_takes_effect_at_once(M):
    try:
        M.set_grad_enabled(False)
        assert M.is_grad_enabled() is False
        assert (M.ones(1, requires_grad=True) * 2).requires_grad is False
    finally:
        M.set_grad_enabled(True)
    assert M.is_grad_enabled() is True


def test_set_grad_enabled_as_a_context_manager_restores(M):
    x = M.ones(1, requires_grad=True)
    with M.set_grad_enabled(False):
        assert (x * 2).grad_fn is None
        with M.set_grad_enabled(True):
            assert (x * 2).grad_fn is not None
        assert M.is_grad_enabled() is False
    assert M.is_grad_enabled() is True


def test_set_grad_enabled_as_a_decorator(M):
    @M.set_grad_enabled(False)
    def f(t):
        return t * 2
    assert M.is_grad_enabled() is True
    assert f(M.ones(1, requires_grad=True)).requires_grad is False
    assert M.is_grad_enabled() is True


# ----- inference mode -------------------------------------------------------------

def test_inference_mode_context(M):
    x = M.ones(2, requires_grad=True)
    with M.inference_mode():
        assert M.is_inference_mode_enabled() is True
        assert M.is_grad_enabled() is False
        y = x * 2
        made = M.zeros(2)
    assert M.is_inference_mode_enabled() is False and M.is_grad_enabled() is True
    assert y.requires_grad is False and y.grad_fn is None
    assert y.is_inference() and made.is_inference()
    assert not x.is_inference() and not (x * 2).is_inference()


def test_inference_mode_false_is_a_no_op(M):
    with M.inference_mode(False):
        assert M.is_inference_mode_enabled() is False
        y = M.ones(1, requires_grad=True) * 2
    assert y.grad_fn is not None and not y.is_inference()


def test_inference_mode_false_nested_in_inference_mode(M):
    with M.inference_mode():
        with M.inference_mode(False):
            assert M.is_inference_mode_enabled() is False
        assert M.is_inference_mode_enabled() is True


def test_inference_mode_decorator(M):
    @M.inference_mode()
    def f(t):
        assert M.is_inference_mode_enabled()
        return t * 2
    assert f(M.ones(1, requires_grad=True)).is_inference()
    assert M.is_inference_mode_enabled() is False


def test_inference_mode_as_a_bare_decorator(M):
    @M.inference_mode
    def f(t):
        return t * 3
    assert f(M.ones(1, requires_grad=True)).is_inference()
    assert M.is_inference_mode_enabled() is False


def test_inference_tensor_cannot_be_saved_for_backward_outside(M):
    with M.inference_mode():
        frozen = M.ones(2)
    w = M.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        w * frozen


def test_inference_tensor_cannot_be_updated_in_place_outside(M):
    with M.inference_mode():
        frozen = M.ones(2)
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode"):
        frozen.add_(1)


def test_inference_tensor_can_be_read_outside(M):
    with M.inference_mode():
        frozen = M.tensor([1.0, 2.0])
    doubled = frozen * 2
    assert doubled.tolist() == [2.0, 4.0] and not doubled.is_inference()


# ----- thread-locality ---------------------------------------------------------------

def _in_thread(fn):
    box = {}

    def run():
        try:
            box["value"] = fn()
        except Exception as exc:  # noqa: BLE001  (re-raised in the test's thread)
            box["error"] = exc
    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=30)
    if "error" in box:
        raise box["error"]
    return box["value"]


@pytest.mark.parametrize("mode", ["no_grad", "set_grad_enabled", "inference_mode"])
def test_a_mode_set_here_is_not_seen_in_another_thread(M, mode):
    enter = {"no_grad": lambda: M.no_grad(), "set_grad_enabled": lambda: M.set_grad_enabled(False),
             "inference_mode": lambda: M.inference_mode()}[mode]
    with enter():
        assert M.is_grad_enabled() is False
        seen = _in_thread(lambda: (M.is_grad_enabled(), M.is_inference_mode_enabled(),
                                   (M.ones(1, requires_grad=True) * 2).requires_grad))
    assert seen == (True, False, True)


def test_a_mode_set_in_another_thread_is_not_seen_here(M):
    def disable_and_report():
        M.set_grad_enabled(False)
        return M.is_grad_enabled()
    assert _in_thread(disable_and_report) is False
    assert M.is_grad_enabled() is True
    assert (M.ones(1, requires_grad=True) * 2).requires_grad is True


def test_modes_in_two_threads_at_once_do_not_interfere(M):
    inside, release = threading.Event(), threading.Event()

    def hold_no_grad():
        with M.no_grad():
            inside.set()
            release.wait(timeout=30)
            return M.is_grad_enabled()
    box = {}
    thread = threading.Thread(target=lambda: box.setdefault("value", hold_no_grad()))
    thread.start()
    assert inside.wait(timeout=30)
    here = M.is_grad_enabled(), (M.ones(1, requires_grad=True) * 2).requires_grad
    release.set()
    thread.join(timeout=30)
    assert here == (True, True)
    assert box["value"] is False


# ----- grad modes and forward-mode AD -------------------------------------------------

@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
def test_no_grad_does_not_stop_forward_mode_tangents(M):
    fw = M.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(M.tensor([1.0]), M.tensor([2.0]))
        with M.no_grad():
            tangent = fw.unpack_dual(x * 3).tangent
    assert tangent.tolist() == [6.0]


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
def test_inference_mode_computes_no_tangents(M):
    fw = M.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(M.tensor([1.0]), M.tensor([2.0]))
        with M.inference_mode():
            tangent = fw.unpack_dual(x * 3).tangent
    assert tangent is None
