"""Input domains as data: where an op's samples are drawn from.

A ``Domain`` is an interval of the real line (optionally with points to stay
away from, such as the poles of ``tan`` or the zero of ``reciprocal``) and,
for complex dtypes, a rectangle of the complex plane. Sampling draws
uniformly and redraws any value that falls within ``margin`` of an excluded
point, so the samples are smooth points of the op: finite differences with
a small step stay on one side of every kink, pole and branch cut.

>>> POSITIVE.sample(np.random.default_rng(0), (3,), np.float64).min() > 0
True
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Domain:
    """An interval (real dtypes) and a rectangle (complex dtypes) to sample from.

    ``low``/``high`` bound the real values (and the real parts of complex
    values); ``imag`` bounds the imaginary parts; ``away_from`` lists points
    (real or complex) that samples keep at least ``margin`` from.
    """

    low: float = -2.0
    high: float = 2.0
    away_from: tuple = ()
    margin: float = 0.0
    imag: tuple = (-2.0, 2.0)
    name: str = ""

    def __post_init__(self):
        if not self.low < self.high:
            raise ValueError(f"domain {self.name!r}: low ({self.low}) must be below "
                             f"high ({self.high})")
        if not self.imag[0] < self.imag[1]:
            raise ValueError(f"domain {self.name!r}: empty imaginary range {self.imag}")

    def contains(self, values) -> np.ndarray:
        """Whether each value lies in the domain (and away from the excluded points)."""
        v = np.asarray(values)
        ok = (v.real >= self.low) & (v.real <= self.high)
        if np.iscomplexobj(v):
            ok &= (v.imag >= self.imag[0]) & (v.imag <= self.imag[1])
        for p in self.away_from:
            ok &= np.abs(v - p) >= self.margin
        return ok

    def sample(self, rng: np.random.Generator, shape: tuple, np_dtype) -> np.ndarray:
        """Values of ``shape`` and NumPy dtype ``np_dtype``, uniform over the domain."""
        np_dtype = np.dtype(np_dtype)
        complex_ = np_dtype.kind == "c"
        out = self._draw(rng, shape, complex_)
        for _ in range(100):
            bad = ~self.contains(out)
            if not bad.any():
                return out.astype(np_dtype)
            out[bad] = self._draw(rng, (int(bad.sum()),), complex_)
        raise ValueError(f"domain {self.name!r}: could not draw values away from {self.away_from} "
                         f"with margin {self.margin} inside [{self.low}, {self.high}]")

    def _draw(self, rng, shape, complex_: bool) -> np.ndarray:
        real = rng.uniform(self.low, self.high, size=shape)
        if not complex_:
            return np.asarray(real, dtype=np.float64)
        return np.asarray(real + 1j * rng.uniform(*self.imag, size=shape), dtype=np.complex128)


#: the default: [-2, 2], and the square [-2, 2] x [-2, 2]i for complex dtypes
REAL = Domain(name="real")
#: positive reals (log, sqrt, rsqrt...); for complex, right of the branch cut on (-inf, 0]
POSITIVE = Domain(0.1, 3.0, imag=(-1.5, 1.5), name="positive")
#: strictly inside (-1, 1) (asin, acos, atanh...)
OPEN_UNIT = Domain(-0.9, 0.9, imag=(-0.8, 0.8), name="open_unit")
#: above -1, away from the pole of log1p at -1
ABOVE_MINUS_ONE = Domain(-0.8, 3.0, imag=(-1.0, 1.0), name="above_minus_one")
#: reals away from 0 (reciprocal, a divisor, kinks of abs and relu)
NONZERO = Domain(-2.0, 2.0, away_from=(0.0,), margin=0.2, name="nonzero")
#: tan on [-3, 3] away from its poles at +-pi/2
TAN = Domain(-3.0, 3.0, away_from=(-math.pi / 2, math.pi / 2), margin=0.2,
             imag=(-1.0, 1.0), name="tan")
#: arguments where exp, sinh, cosh stay moderate
MODERATE = Domain(-1.5, 1.5, imag=(-1.5, 1.5), name="moderate")
#: a square around 0 that avoids the branch cuts of atan on the imaginary axis
ATAN = Domain(-2.0, 2.0, imag=(-0.8, 0.8), name="atan")

DOMAINS = {d.name: d for d in (REAL, POSITIVE, OPEN_UNIT, ABOVE_MINUS_ONE, NONZERO, TAN,
                               MODERATE, ATAN)}
