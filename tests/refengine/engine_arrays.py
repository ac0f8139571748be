"""Reading a tensor of either engine as a NumPy array, and comparing two."""
from __future__ import annotations

import numpy as np


def arr(t) -> np.ndarray:
    t = t.detach()
    if hasattr(t, "resolve_conj"):   # torch may hand back a lazily conjugated tensor
        t = t.resolve_conj()
    return np.asarray(t.numpy())


def close(ours, expected, tol: float = 1e-5) -> None:
    expected = arr(expected) if hasattr(expected, "detach") else np.asarray(expected)
    np.testing.assert_allclose(arr(ours), expected, rtol=tol, atol=tol)
