"""Numbers and arrays as strict JSON: complex as [re, im], non-finite as text."""
from __future__ import annotations

import numpy as np

from adcheck.refengine.pytree import tree_map


def json_float(value):
    """A float, or its text (``"nan"``, ``"inf"``) when not finite."""
    if value is None:
        return None
    value = float(value)
    return value if np.isfinite(value) else str(value)


def json_array(array):
    """Nested lists of ``json_float``; a complex entry becomes ``[re, im]``."""
    if array is None:
        return None
    array = np.asarray(array)
    if np.iscomplexobj(array):
        array = np.stack([array.real, array.imag], axis=-1)
    return tree_map(json_float, array.tolist())
