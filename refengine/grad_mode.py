"""Grad modes: default (grad) mode, no-grad and inference mode, per thread.

Each mode is a context manager and a decorator, as in PyTorch::

    with refengine.no_grad():
        y = x * 2          # not recorded
    @refengine.no_grad()
    def update(p): ...
"""
from __future__ import annotations

import functools
import inspect
import threading


class _ModeState(threading.local):
    # Class attributes are each thread's defaults. getattr(local, name,
    # default) on a thread that never set the name raises and catches an
    # AttributeError inside (about 1 us); every op and every new tensor reads
    # these, so the defaults must be found without one.
    grad = True
    inference = False


_state = _ModeState()


def is_grad_enabled() -> bool:
    """Whether operations are recorded for backward in this thread."""
    return _state.grad


def is_inference_mode_enabled() -> bool:
    """Whether inference mode is on in this thread."""
    return _state.inference


def is_recording() -> bool:
    """Whether ops are recorded now: grad mode on and inference mode off.

    ``enable_grad`` inside ``inference_mode`` turns grad mode on, yet
    PyTorch records no op there (custom Functions, which ask only grad
    mode, are the exception, as in PyTorch).
    """
    return _state.grad and not _state.inference


def _set_grad(mode: bool) -> None:
    _state.grad = bool(mode)


class _Mode:
    """Shared context-manager and decorator behaviour of the grad modes.

    A mode decorates with or without parentheses (``@no_grad``,
    ``@no_grad()``); a decorated generator runs each step in the mode.
    """

    def __call__(self, func):
        if inspect.isgeneratorfunction(func):
            return self._wrap_generator(func)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)
        return wrapper

    def _wrap_generator(self, func):
        # Every entry into the generator (next, send, throw, close) runs in
        # the mode, so its own except and finally blocks do too; between
        # steps the caller's mode holds.
        @functools.wraps(func)
        def generator(*args, **kwargs):
            gen = func(*args, **kwargs)
            try:
                with self.clone():
                    value = gen.send(None)
                while True:
                    try:
                        sent = yield value
                    except GeneratorExit:
                        with self.clone():
                            gen.close()
                        raise
                    except BaseException as exc:  # noqa: BLE001 - thrown in by the caller
                        with self.clone():
                            value = gen.throw(exc)
                    else:
                        with self.clone():
                            value = gen.send(sent)
            except StopIteration as stop:
                return stop.value
        return generator

    def clone(self):
        return self.__class__()


class _BareDecorator(_Mode):
    """A mode usable as ``@mode`` as well as ``@mode()``."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return object.__new__(cls)   # (the usual call, ``no_grad()``: no super() lookup)
        return cls()(orig_func)


class no_grad(_BareDecorator):
    """Disable recording: results behave as if no input required grad."""

    # (the thread's state read and written here, not through is_grad_enabled and
    # _set_grad: a check enters these modes around every evaluation)
    def __enter__(self):
        state = _state
        self.prev = state.grad
        state.grad = False

    def __exit__(self, *exc):
        _state.grad = self.prev


class enable_grad(_BareDecorator):
    """Enable recording inside a no-grad region."""

    def __enter__(self):
        state = _state
        self.prev = state.grad
        state.grad = True

    def __exit__(self, *exc):
        _state.grad = self.prev


class set_grad_enabled(_Mode):
    """Set grad mode on or off; takes effect at once, and restores on exit."""

    def __init__(self, mode: bool):
        self.prev = is_grad_enabled()
        self.mode = bool(mode)
        _set_grad(self.mode)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _set_grad(self.prev)

    def __call__(self, func):
        _set_grad(self.prev)   # as a decorator it must not change the mode now
        return super().__call__(func)

    def clone(self):
        return self.__class__(self.mode)


class inference_mode(_Mode):
    """No recording, and tensors made here are inference tensors."""

    def __new__(cls, mode=True):
        if callable(mode):      # used bare: @inference_mode
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True):
        self.mode = bool(mode) if not callable(mode) else True

    def __enter__(self):
        # as in PyTorch, inference_mode(False) turns recording back on, also
        # inside no_grad: the two modes are set together, one the other's opposite
        self.prev = (is_grad_enabled(), is_inference_mode_enabled())
        _set_grad(not self.mode)
        _state.inference = self.mode

    def __exit__(self, *exc):
        _set_grad(self.prev[0])
        _state.inference = self.prev[1]

    def clone(self):
        return self.__class__(self.mode)
