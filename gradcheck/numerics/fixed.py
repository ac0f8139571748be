"""Random numbers from a fixed seed, made once per size.

Some of the numerics' random numbers come from a constant seed, so that a
check is the same from run to run: the noise floor's moves
(``noisefloor``) and the sentinel groups' weights (``sentinel``). They
depend on nothing but their count, and seeding a generator
(``np.random.default_rng``) costs more than a small check's use of them, so
``kept`` makes them once per size and hands out the same read-only array.
"""
from __future__ import annotations

import numpy as np

#: sizes up to this are kept (larger draws are made each time)
KEPT_SIZE = 2 ** 12
#: arrays kept before all are forgotten
KEPT_ARRAYS = 512

_KEPT: dict = {}


def kept(draw, size: int) -> np.ndarray:
    """``draw(size)``, an array of random numbers from a fixed seed, read-only,
    made once per ``draw`` and ``size`` (up to ``KEPT_SIZE``)."""
    key = (draw, size)
    found = _KEPT.get(key)
    if found is None:
        found = draw(size)
        found.flags.writeable = False
        if size <= KEPT_SIZE:
            if len(_KEPT) >= KEPT_ARRAYS:
                _KEPT.clear()
            _KEPT[key] = found
    return found
