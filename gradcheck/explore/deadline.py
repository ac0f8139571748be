"""A hard stop for one explored point: ``deadline(seconds, module)``.

A function may hang at a point the catalogue builds (a loop that never
converges at 1e300): ``gradcheck.core.interrupt`` stops it with ``Timeout``
where a timer can; elsewhere the point runs unbounded and the budget is
checked between points.

The timer may fire between a grad mode's switch and the ``try`` that would
switch it back (inside ``no_grad().__enter__``, or inside autograd's own
code): the engine's grad mode is put back as it was when the block ends, as
``interrupt.kept_level`` puts back torch.func's levels. (One run of
tests/gradcheck with the quick pass on by default, before this guard, found
torch's grad mode off in later tests, "element 0 of tensors does not require
grad"; where it was left off was not pinned down. The runs since, with the
guard, have not shown it.)
"""
from __future__ import annotations

import sys
from contextlib import contextmanager

from adcheck.gradcheck.core.interrupt import interrupting


class Timeout(BaseException):
    """An explored point ran past its time."""


def _grad_modes(module) -> list:
    """``(set_grad_enabled, mode)`` of the engine's module and of torch (which
    a refengine or JAX function may call too), where they have one."""
    found = []
    for owner in dict.fromkeys(m for m in (module, sys.modules.get("torch")) if m is not None):
        get = getattr(owner, "is_grad_enabled", None)
        put = getattr(owner, "set_grad_enabled", None)
        if callable(get) and callable(put):
            found.append((put, bool(get())))
    return found


@contextmanager
def deadline(seconds: float, module=None):
    """Raise ``Timeout`` in the body after ``seconds``; the grad modes of
    ``module`` (the engine's) and torch are as they were after it (see the
    module docstring)."""
    modes = _grad_modes(module)
    try:
        with interrupting(seconds, Timeout):
            yield
    finally:
        for put, mode in modes:
            put(mode)
