"""Whether gradcheck builds Jacobians in batches (one vmapped evaluation for
all perturbations of an input, one batched backward for all rows, one
batched forward pass for all columns) or one vector at a time.

Batching changes how fast a check runs, not what it finds: each batched
evaluation computes, example by example, what the loop computes. Turn it off
to compare (``bench/vs_torch.py --no-batch``), or when a function misbehaves
under vmap (gradcheck falls back to the loop by itself when a batched call
raises, and the report's ``batching`` entry says so).
"""
from __future__ import annotations

_enabled = [True]


def set_batching(enabled: bool) -> None:
    """Build Jacobians in batches (the default) or one vector at a time."""
    _enabled[0] = bool(enabled)


def batching_enabled() -> bool:
    """Whether Jacobians are built in batches."""
    return _enabled[0]
