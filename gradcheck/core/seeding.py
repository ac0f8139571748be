"""The random generator of one check, made from the check's seed.

A check draws its probes, scaling vectors and grad_outputs from one
``numpy.random.Generator`` made from ``Report.seed``, so that ``check(...,
seed=report.seed)`` repeats it. ``np.random.default_rng(seed)`` hashes the
seed through a ``SeedSequence`` first: 8 us alone, and 27 us in the middle of
a check whose work has left its code out of the caches (measured in a loop of
``bench/vs_torch.py``'s fast checks), about 3 % of a small fast check.

A check's seed is already random (``secrets``) or the caller's choice, and
needs no further hashing for quality: PCG64 takes its 256 bits of state and
increment from SplitMix64's outputs of the seed, which spread any two seeds
(consecutive ones included) apart. A seed therefore names adcheck's own
stream, not ``default_rng(seed)``'s: a report's seed repeats the check with
the same version of adcheck.
"""
from __future__ import annotations

import numpy as np
from numpy.random.bit_generator import ISeedSequence

_MASK = (1 << 64) - 1


class _SplitMix(ISeedSequence):
    """The words PCG64 seeds itself from: SplitMix64's outputs for ``seed``."""

    __slots__ = ("seed",)

    def __init__(self, seed: int):
        self.seed = seed & _MASK

    def generate_state(self, n_words, dtype=np.uint32):
        # (SplitMix64: Steele, Lea and Flood, "Fast splittable pseudorandom
        # number generators", 2014; the constants are its published ones)
        wide = np.dtype(dtype) == np.uint64
        x, words = self.seed, []
        for _ in range(n_words if wide else (n_words + 1) // 2):
            x = (x + 0x9E3779B97F4A7C15) & _MASK
            z = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
            words.append(z ^ (z >> 31))
        state = np.array(words, dtype=np.uint64)
        return state if wide else state.view(np.uint32)[:n_words]


def check_rng(seed: int) -> np.random.Generator:
    """The generator of the check whose seed is ``seed`` (an int >= 0)."""
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"check: seed must be an integer >= 0, not {seed!r}; for example "
                         "seed=0, or the seed a report printed")
    return np.random.Generator(np.random.PCG64(_SplitMix(int(seed))))


def uniform_like(rng: np.random.Generator, array: np.ndarray) -> np.ndarray:
    """Uniform random values in [-1, 1) shaped and typed like ``array`` (both parts
    of a complex one): a random grad_output or cotangent."""
    values = rng.uniform(-1, 1, array.shape)
    if np.iscomplexobj(array):
        values = values + 1j * rng.uniform(-1, 1, array.shape)
    return values.astype(array.dtype)
