"""``autograd.graph.increment_version``: mark tensors as modified in place."""
from __future__ import annotations

from ..tensor import Tensor


def increment_version(tensor) -> None:
    """Bump the version counter of ``tensor`` (a Tensor or an iterable of them).

    For code that writes into a tensor's memory outside refengine (through
    ``numpy()``, say): autograd then refuses a saved copy of the old value,
    as it does after an in-place op. Inference tensors have no version
    counter and are skipped.
    """
    if isinstance(tensor, Tensor):
        tensor = (tensor,)
    try:
        tensors = list(tensor)
    except TypeError:
        raise RuntimeError("increment_version expect a Iterable[Tensor] as input") from None
    if not all(isinstance(t, Tensor) for t in tensors):
        raise RuntimeError("increment_version expects each element of the iterable to be a "
                           "tensor")
    for t in tensors:
        if not t._is_inference:
            t._bump_version()
