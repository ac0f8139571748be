"""The fixed-seed draws of the noise floor's moves and of the sentinel groups'
weights, kept by size (``gradcheck.numerics.fixed.kept``): the same
numbers as a generator freshly seeded each time (NumPy's own stream), and
read-only, so no caller can change what the next one gets."""
from __future__ import annotations

import numpy as np
import pytest

from adcheck.gradcheck.numerics import fixed, noisefloor, sentinel


@pytest.mark.parametrize("size", [1, 6, 37, fixed.KEPT_SIZE + 1])
def test_noise_moves_draws_are_numpys(size):
    rng = np.random.default_rng(0)
    fresh = [rng.uniform(-1.0, 1.0, size) for _ in range(noisefloor.MOVES)]
    for _ in range(2):   # (made, then kept)
        draws = fixed.kept(noisefloor._draws, size)
        assert [d.tobytes() for d in draws] == [f.tobytes() for f in fresh]
        assert not draws.flags.writeable


@pytest.mark.parametrize("count", [1, 16, 40, fixed.KEPT_SIZE + 3])
def test_group_weights_are_numpys(count):
    rng = np.random.default_rng(sentinel.WEIGHT_SEED)
    fresh = rng.uniform(1.0, 2.0, count)
    fresh[rng.random(count) < 0.5] *= -1
    for _ in range(2):
        parts, weights = sentinel.groups(np.arange(count))
        assert np.concatenate(weights).tobytes() == fresh.tobytes()
        assert [len(p) for p in parts] == [len(w) for w in weights]
        with pytest.raises(ValueError):
            weights[0][0] = 1.0
