"""A first derivative's vmappable twin: its outputs at many points in one call.

A first derivative (``gradcheck.core.secondorder``) calls autograd inside, which
an engine's vmap may not differentiate through; its ``functional()`` gives a
twin made of the engine's functional transforms, which vmap can map. The twin
is used only where, at the given inputs, it gives the first derivative's
values to the rounding of a few operations (``TWIN_ULPS``); otherwise every
point is evaluated by the first derivative itself. Imports only from
``gradcheck.core``'s problem.
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.core.problem import as_tuple
from adcheck.gradcheck.core.coords import largest_finite

#: how far (in ulps of the output's scale) a first derivative's vmappable twin may be
#: from it at the given inputs: the same formulas, fused or ordered differently
TWIN_ULPS = 64


class Twin:
    """A first derivative's vmappable twin, owned by the ``Evaluator`` of its
    problem: looked for once, the first time a batch of points needs it."""

    def __init__(self, problem):
        self.problem = problem
        #: ``(twin or None,)`` once looked for
        self._found: tuple | None = None

    def function(self):
        """The twin when there is one that agrees at the given inputs, else ``None``."""
        if self._found is None:
            maker = getattr(self.problem.source, "functional", None)
            twin = maker() if maker is not None else None
            agrees = twin is not None and twin_agrees(self.problem, twin)
            self._found = (twin if agrees else None,)
        return self._found[0]

    def outputs_at(self, in_idx: int, arrays: np.ndarray) -> dict | None:
        """The first derivative's outputs at each ``arrays[k]`` in place of input
        ``in_idx``, through its twin, or ``None``: no twin, or one whose value
        at the given inputs is not the first derivative's."""
        p, E = self.problem, self.problem.engine
        twin = self.function()
        if twin is None or not all(E.plain_layout(p.inputs[i]) for i in p.arrays):
            return None
        with E.enable_grad():
            args = [E.detach(x) if E.is_tensor(x) else x for x in p.fresh_inputs({})]
            dims = [None] * len(args)
            args[in_idx], dims[in_idx] = p.like_input(in_idx, arrays), 0
            outs = as_tuple(E.vmap(twin, tuple(dims))(*args))
        return {o: E.to_numpy(outs[o]) for o in p.float_out}


def twin_agrees(p, twin) -> bool:
    """Whether ``twin`` at the given inputs of problem ``p`` gives the first
    derivative's values, to the rounding of a few operations."""
    E = p.engine
    try:
        with E.enable_grad():
            outs = as_tuple(twin(*[E.detach(x) if E.is_tensor(x) else x
                                   for x in p.fresh_inputs({})]))
            values = {o: E.to_numpy(outs[o]) for o in p.float_out}
    except Exception:  # noqa: BLE001 - a twin that cannot run is not used
        return False
    for o, expected in p.out_arrays.items():
        got = values.get(o)
        if got is None or got.shape != expected.shape:
            return False
        scale = largest_finite(expected)
        allowed = TWIN_ULPS * p.epsilon(out_idx=o) * scale
        with np.errstate(invalid="ignore"):
            if not np.all((np.abs(got - expected) <= allowed)
                          | (np.isnan(got) & np.isnan(expected)) | (got == expected)):
                return False
    return True
