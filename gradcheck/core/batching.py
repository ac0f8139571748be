"""Whether gradcheck builds Jacobians in batches (one vmapped evaluation for
all perturbations of an input, one batched backward for all rows, one
batched forward pass for all columns) or one vector at a time.

Batching changes how fast a check runs, not what it finds: each batched
evaluation computes, example by example, what the loop computes. It is the
option ``batching`` of a check (``check(..., batching=False)``, the runner's
``Policy.batching``), which ``gradcheck.api.run`` holds for the duration of the
check with ``batched``; the evaluations read it with ``batching_enabled``.
Turn it off to compare (``bench/vs_torch.py --no-batch``), or when a function
misbehaves under vmap (gradcheck falls back to the loop by itself when a
batched call raises, and the report's ``batching`` entry says so).
"""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar

#: in this context (a check, or a caller's block): whether Jacobians are built in batches
_BATCHING: ContextVar[bool] = ContextVar("adcheck_batching", default=True)


@contextmanager
def batched(enabled: bool):
    """In the block, Jacobians are built in batches (``True``) or one vector at a
    time (``False``); the setting before it comes back after it."""
    token = _BATCHING.set(bool(enabled))
    try:
        yield
    finally:
        _BATCHING.reset(token)


def set_batching(enabled: bool) -> None:
    """Build Jacobians in batches (the default) or one vector at a time in this
    context from now on, for the checks that leave the option ``batching`` at
    its default. Prefer the option, or ``batched`` around a block: this one
    outlives its caller (kept for scripts and benches written before it)."""
    _BATCHING.set(bool(enabled))


def batching_enabled() -> bool:
    """Whether Jacobians are built in batches here."""
    return _BATCHING.get()
