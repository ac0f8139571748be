"""Engine-neutral comparisons for conformance cases."""
from __future__ import annotations

import numpy as np


def to_numpy(value) -> np.ndarray:
    """A NumPy copy of a refengine or torch tensor (or of plain data)."""
    if hasattr(value, "detach") and hasattr(value, "numpy"):
        value = value.detach()
        if hasattr(value, "resolve_conj"):
            value = value.resolve_conj()
        return np.array(value.numpy(), copy=True)
    return np.asarray(value)


def assert_close(actual, expected, *, rtol: float = 1e-6, atol: float = 1e-6,
                 equal_nan: bool = True) -> None:
    """Assert two tensors (or arrays, lists, numbers) agree elementwise."""
    a, e = to_numpy(actual), to_numpy(expected)
    assert a.shape == e.shape, f"shape {a.shape} != expected {e.shape}"
    np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan)


def op_label(node) -> str:
    """The operation a node belongs to, as errors name it: "ExpBackward0" -> "Exp"."""
    import re
    return re.sub(r"Backward\d*$", "", node.name())


def version_error(node_name: str | None = None, *, now: int = 1, saved: int = 0) -> str:
    """A regex for the error raised when a saved tensor was modified in place.

    It matches PyTorch's words, names the versions, and when ``node_name`` is
    given, the operation whose output was saved.
    """
    import re
    pattern = "modified by an inplace operation"
    if node_name is not None:
        pattern += f".*output 0 of {re.escape(node_name)}"
    return pattern + f".*is at version {now}; expected version {saved} instead"
