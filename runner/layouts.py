"""Where a Jacobian entry sits in the user's tensors, for ``adcheck check``.

gradcheck's Jacobians are real matrices: row ``r`` is a real coordinate of
an output, column ``c`` one of an input, a complex element owning two
coordinates (its real part ``2k``, its imaginary part ``2k + 1``; see
``gradcheck.core.coords``). ``layout_and_outputs(call)`` runs the call once and
records each input's and output's shape and complexness; ``entry_name``
turns a coordinate back into the tensor's own index (``[1, 2].im``).

The layout is a plain dict (it goes into the report's settings and JSON)::

    {"inputs": [[shape, complex, name or None], ...], "outputs": [[shape, complex], ...]}

An output that is not a tensor has ``None`` in place of its pair.
"""
from __future__ import annotations

import numpy as np


def _shape_of(value) -> list | None:
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is None or dtype is None:
        return None
    return [[int(k) for k in shape], "complex" in str(dtype)]


def all_finite(outs) -> bool:
    """Whether every floating point or complex entry of the tensors ``outs``
    (of any engine) is finite; an output that cannot be read counts as finite."""
    for value in outs:
        if _shape_of(value) is None:
            continue
        try:
            held = value.detach() if hasattr(value, "detach") else value
            array = np.asarray(held.cpu() if hasattr(held, "cpu") else held)
        except Exception:   # (an engine's tensor NumPy cannot read: nothing said)
            continue
        if array.dtype.kind in "fc" and not np.all(np.isfinite(array)):
            return False
    return True


def layout_and_outputs(call) -> tuple[dict, tuple]:
    """The layout of ``call`` (``func``, ``inputs`` and ``names`` as
    ``TargetSubject.call`` gives them), and the outputs of ``func``'s one run
    on ``inputs``."""
    out = call.func(*call.inputs)
    outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    names = list(call.names or [])
    inputs = []
    for i, x in enumerate(call.inputs):
        pair = _shape_of(x)
        inputs.append(None if pair is None else pair + [names[i] if i < len(names) else None])
    return {"inputs": inputs, "outputs": [_shape_of(o) for o in outs]}, outs


def real_size(pair) -> int:
    """The number of real coordinates of a ``[shape, complex, ...]`` entry."""
    shape, complex_ = pair[0], pair[1]
    return int(np.prod(shape, dtype=np.int64)) * (2 if complex_ else 1)


def entry_name(pair, coordinate: int) -> str:
    """Real coordinate ``coordinate`` of a tensor of layout ``pair`` as the
    tensor's own index: ``[1, 2]``, or ``[1, 2].re`` / ``.im`` when complex."""
    shape, complex_ = pair[0], pair[1]
    element, part = divmod(int(coordinate), 2) if complex_ else (int(coordinate), None)
    index = np.unravel_index(element, shape) if shape else ()
    text = "[" + ", ".join(str(int(k)) for k in index) + "]"
    return text + ("" if part is None else (".re", ".im")[part])
