"""Grad modes nested in each other, decorated generators, and inference mode's
reach: what recording does under each combination, as torch 2.13 does it."""
from __future__ import annotations

import pytest

from adcheck.conformance.case import AUTOGRAD_NOTE, MECHANICS, TORCH_BEHAVIOUR, case


def _modes(E) -> tuple:
    return E.is_grad_enabled(), E.is_inference_mode_enabled()


@case("inference_mode(False) inside inference_mode, and inside no_grad, turns grad mode "
      "on and inference mode off: operations are recorded again", source=TORCH_BEHAVIOUR)
def inference_mode_false_turns_recording_back_on(E):
    x = E.ones(2, requires_grad=True)
    for outer in (E.inference_mode(), E.no_grad()):
        with outer:
            with E.inference_mode(False):
                assert _modes(E) == (True, False)
                y = x * 2
            assert E.is_grad_enabled() is False
        assert y.requires_grad and y.grad_fn is not None and not y.is_inference()
    (y * y).sum().backward()
    assert x.grad.tolist() == [8.0, 8.0]


@case("inference_mode(True) inside no_grad leaves grad mode off on exit; the modes are "
      "restored in reverse order", source=TORCH_BEHAVIOUR)
def nested_modes_restore_in_order(E):
    with E.no_grad():
        with E.inference_mode():
            assert _modes(E) == (False, True)
            with E.inference_mode(False):
                assert _modes(E) == (True, False)
            assert _modes(E) == (False, True)
        assert _modes(E) == (False, False)
    assert _modes(E) == (True, False)


def _generator_log(E, mode):
    """Drive a generator decorated with ``mode`` through next, send, throw and
    close; returns the (grad, inference) modes seen inside and outside it."""
    log = []

    @mode
    def gen():
        log.append(("start", _modes(E)))
        try:
            while True:
                try:
                    got = yield _modes(E)
                    log.append(("sent", got, _modes(E)))
                except ValueError:
                    log.append(("except", _modes(E)))
                    yield "handled"
        finally:
            log.append(("finally", _modes(E)))

    caller = E.no_grad() if isinstance(mode, E.enable_grad) else E.enable_grad()
    with caller:
        g = gen()
        log.append(("next", next(g), _modes(E)))
        log.append(("send", g.send(5), _modes(E)))
        log.append(("throw", g.throw(ValueError("into the generator")), _modes(E)))
        g.close()
        log.append(("closed", _modes(E)))
    return log


@case("The second construct is the function decorator torch.no_grad() (it can also be "
      "used as a context manager).", source=AUTOGRAD_NOTE)
def decorated_generator_runs_every_step_in_the_mode(E):
    for mode, inside, outside in ((E.no_grad(), (False, False), (True, False)),
                                  (E.enable_grad(), (True, False), (False, False)),
                                  (E.inference_mode(), (False, True), (True, False)),
                                  (E.set_grad_enabled(False), (False, False), (True, False))):
        log = _generator_log(E, mode)
        assert log == [("start", inside), ("next", inside, outside), ("sent", 5, inside),
                       ("send", inside, outside), ("except", inside),
                       ("throw", "handled", outside), ("finally", inside),
                       ("closed", outside)], (type(mode).__name__, log)


@case("a decorated generator's exception propagates to the caller through throw, its "
      "return value ends the iteration, and GeneratorExit reaches it in the mode on close",
      source=TORCH_BEHAVIOUR)
def decorated_generator_throw_close_and_return(E):
    @E.no_grad()
    def plain():
        yield 1
    g = plain()
    next(g)
    with pytest.raises(KeyError, match="k"):
        g.throw(KeyError("k"))

    seen = []

    @E.no_grad()
    def watches_exit():
        try:
            yield 1
        except GeneratorExit:
            seen.append(E.is_grad_enabled())
            raise
    g = watches_exit()
    next(g)
    g.close()
    assert seen == [False] and E.is_grad_enabled()

    @E.inference_mode()
    def doubles():
        x = yield 1
        return x * 2
    g = doubles()
    next(g)
    with pytest.raises(StopIteration) as stop:
        g.send(21)
    assert stop.value.value == 42


@case("enable_grad inside inference_mode turns grad mode on but records nothing: results "
      "are inference tensors without grad_fn, and an in-place op on a leaf that requires "
      "grad is allowed there", source=TORCH_BEHAVIOUR)
def enable_grad_inside_inference_mode_records_nothing(E):
    x = E.ones(2, requires_grad=True)
    with E.inference_mode():
        with E.enable_grad():
            assert _modes(E) == (True, True)
            y = x * 2
            assert not y.requires_grad and y.grad_fn is None and y.is_inference()
            assert not x.sum().requires_grad
            leaf = E.ones(2, requires_grad=True)
            leaf.add_(1)                      # no "leaf Variable ... in-place" error
            assert leaf.requires_grad and leaf.is_leaf and leaf.tolist() == [2.0, 2.0]
            x.mul_(3)                         # a normal leaf: no error either
    assert x.tolist() == [3.0, 3.0] and x.grad_fn is None


@case("a custom Function applied under enable_grad inside inference_mode is recorded "
      "(it asks grad mode only); its output is an inference tensor", source=TORCH_BEHAVIOUR)
def custom_function_under_enable_grad_in_inference_mode(E):
    class Double(E.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = E.ones(2, requires_grad=True)
    with E.inference_mode():
        with E.enable_grad():
            out = Double.apply(x)
        plain = Double.apply(x)
    assert out.requires_grad and out.grad_fn is not None and out.is_inference()
    assert not plain.requires_grad


@case("The most important thing to know about the default mode is that it is the only "
      "mode in which requires_grad takes effect.", source=MECHANICS)
def view_made_in_inference_or_no_grad_mode_requires_grad_like_its_base(E):
    # torch: such a view reports requires_grad=True (its base requires grad)
    # yet has no grad_fn; ops on it are recorded, and no gradient reaches the
    # base through it
    x = E.ones(3, requires_grad=True)
    with E.inference_mode():
        inf_view = x[:2]
    with E.no_grad():
        nograd_view = x[1:]
    for v in (inf_view, nograd_view):
        assert v.requires_grad and v.grad_fn is None and v.is_leaf and v._is_view()
        assert not v.is_inference()
        y = v * 2
        assert y.requires_grad and y.grad_fn is not None
        y.sum().backward()
        assert x.grad is None and v.grad is None
    assert not x.detach()[:1].requires_grad
    x.requires_grad_(False)
    assert not inf_view.requires_grad and not nograd_view.requires_grad


@case("a view made before its base requires grad reports requires_grad once the base does",
      source=TORCH_BEHAVIOUR)
def view_follows_its_base_requires_grad(E):
    x = E.ones(2)
    v = x[:1]
    assert not v.requires_grad
    x.requires_grad_()
    assert v.requires_grad and v.grad_fn is None


@case("torch.autograd offers no_grad, enable_grad, set_grad_enabled and inference_mode, "
      "the same objects as the top-level names", source=TORCH_BEHAVIOUR)
def autograd_namespace_offers_the_grad_modes(E):
    for name in ("no_grad", "enable_grad", "set_grad_enabled", "inference_mode"):
        assert getattr(E.autograd, name) is getattr(E, name), name
    assert E.autograd.grad_mode.no_grad is E.no_grad
    with E.autograd.no_grad():
        assert not E.is_grad_enabled()
    with E.autograd.set_grad_enabled(False):
        with E.autograd.enable_grad():
            assert E.is_grad_enabled()
