"""Hook handles and the saved-tensor hook stack (thread-local)."""
from __future__ import annotations

import itertools
import threading

_ids = itertools.count()


class RemovableHandle:
    """Returned by every ``register_*hook``; ``remove()`` unregisters the hook."""

    __slots__ = ("_dicts", "id")

    def __init__(self, dicts: list, hook_id: int):
        self._dicts = dicts
        self.id = hook_id

    @classmethod
    def add(cls, hooks: dict, fn) -> "RemovableHandle":
        # like PyTorch, any object is accepted here: calling it is what fails
        hook_id = next(_ids)
        hooks[hook_id] = fn
        return cls([hooks], hook_id)

    def remove(self) -> None:
        for d in self._dicts:
            d.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class _HookState(threading.local):
    # Class attributes are each thread's defaults: every saved tensor asks
    # for the hooks, and a getattr default on an unset thread-local name
    # costs a caught AttributeError.
    stack = None        # (pack, unpack) pairs, innermost last
    disabled = None     # the error message while hooks are disabled


_tls = _HookState()


def _stack() -> list:
    stack = _tls.stack
    if stack is None:
        stack = _tls.stack = []
    return stack


def current_saved_hooks():
    """The innermost (pack, unpack) pair in force in this thread, or None."""
    if _tls.disabled is not None:
        return None
    stack = _tls.stack
    return stack[-1] if stack else None


class saved_tensors_hooks:
    """Apply ``pack_hook`` / ``unpack_hook`` to every tensor saved inside.

    >>> with saved_tensors_hooks(lambda t: t.detach(), lambda t: t):
    ...     y = x * x
    """

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        message = _tls.disabled
        if message is not None:
            raise RuntimeError(message)
        _stack().append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc):
        _stack().pop()


class disable_saved_tensors_hooks:
    """Forbid saved-tensor hooks inside; trying to use them raises ``error_message``."""

    def __init__(self, error_message: str):
        self.error_message = error_message

    def __enter__(self):
        self.prev = _tls.disabled
        _tls.disabled = self.error_message

    def __exit__(self, *exc):
        _tls.disabled = self.prev
