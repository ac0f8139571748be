"""The random generator of a check's seed, its seeding done once per seed.

``np.random.default_rng(seed)`` hashes the seed through a ``SeedSequence``
into PCG64's 256 bits of state: 10 to 20 us, a fiftieth of a small fast
check, and the same work again whenever a seed is checked again (a test's
loop, a benchmark's rounds, a function checked at several inputs with one
seed). ``generator(seed)`` keeps the hashed words by seed and hands them to
a new PCG64 through ``_Words``, which PCG64 takes as its seed sequence:
the same state, so the same stream, as ``default_rng(seed)`` (the tests
compare them), in about 3 us. Each call returns a generator of its own.
"""
from __future__ import annotations

import numpy as np
from numpy.random.bit_generator import ISeedSequence

#: PCG64's seeding words, by seed (cleared whole when full: a cache)
_WORDS: dict = {}
KEPT_SIZE = 1024
_N_WORDS = 4   # PCG64 asks its seed sequence for 4 uint64 words


class _Words(ISeedSequence):
    """A seed sequence whose words are already hashed."""

    __slots__ = ("words",)

    def __init__(self, words: np.ndarray):
        self.words = words

    def generate_state(self, n_words, dtype=np.uint32):
        if n_words != _N_WORDS or np.dtype(dtype) != np.uint64:   # not PCG64's request
            raise ValueError(f"kept seeding words are 4 uint64, not {n_words} {dtype}")
        return self.words.copy()


def generator(seed: int) -> np.random.Generator:
    """A new ``Generator`` whose stream is ``np.random.default_rng(seed)``'s."""
    if type(seed) is not int:   # (an array, a SeedSequence: seeded as numpy seeds them)
        return np.random.default_rng(seed)
    words = _WORDS.get(seed)
    if words is None:
        words = np.random.SeedSequence(seed).generate_state(_N_WORDS, np.uint64)
        if len(_WORDS) >= KEPT_SIZE:
            _WORDS.clear()
        _WORDS[seed] = words
    return np.random.Generator(np.random.PCG64(_Words(words)))
