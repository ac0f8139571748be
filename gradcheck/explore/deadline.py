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


def _forward_level():
    """torch's forward-AD level as its Python side knows it (-1: none open);
    None where torch is not loaded."""
    forward_ad = sys.modules.get("torch.autograd.forward_ad")
    return None if forward_ad is None else forward_ad._current_level


def _close_forward_levels(before: int) -> None:
    """Close the forward-AD levels opened since ``before`` and left open: a
    timer that fires inside ``dual_level``'s exit (before torch's C++ level is
    closed, or after it and before Python records that) or its entry (after it
    is opened, before Python records it) leaves one, and every later
    forward-mode check in the process then fails with "Nested forward mode AD
    is not supported" (233 of ``adcheck ops --engine
    torch --explore``'s forward checks, one worker's, until this guard)."""
    torch = sys.modules["torch"]
    forward_ad = torch.autograd.forward_ad
    while forward_ad._current_level > before:
        level = forward_ad._current_level
        try:
            forward_ad.exit_dual_level()
        except RuntimeError:
            # closed in C++ already, the timer fired before Python recorded it (inside
            # exit_dual_level's own call): Python's record is put right, else the next
            # entry's level is "not valid" and leaves one open in C++ (298 forward checks
            # of one --engine torch --explore run, after "Exiting a forward AD level
            # that is not the last" at square's budget end)
            forward_ad._current_level = level - 1
    if before >= 0:
        return    # the caller's own level is open: nothing to probe
    try:          # no level may be open now: opening one says whether C++ has one
        level = torch._C._enter_dual_level()
    except RuntimeError:    # opened in C++ only: close it
        torch._C._exit_dual_level(level=0)
    else:
        torch._C._exit_dual_level(level=level)


@contextmanager
def deadline(seconds: float, module=None):
    """Raise ``Timeout`` in the body after ``seconds`` (yields the ``Alarm``: an
    error the body caught or wrapped may have been one); the grad modes of
    ``module`` (the engine's) and torch, and torch's forward-AD levels, are as
    they were after it (see the module docstring; refengine's forward-AD levels:
    ``interrupt.kept_forward_state``)."""
    modes = _grad_modes(module)
    level = _forward_level()
    try:
        with interrupting(seconds, Timeout) as alarm:
            try:
                yield alarm
            except Exception as exc:
                if alarm.expired:   # (wrapped by the code under check: jax.pure_callback's)
                    raise Timeout() from exc
                raise
    finally:
        for put, mode in modes:
            put(mode)
        if level is not None and "torch" in sys.modules:
            _close_forward_levels(level)
