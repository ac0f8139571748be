"""Special functions NumPy lacks: erfinv lgamma digamma polygamma (real inputs).

erfinv, digamma and polygamma are vectorized float64 algorithms accurate to a
few ulps (tests/refengine/test_special_functions.py measures them against
mpmath at 50 digits); float32 inputs are computed in float64 and rounded
once. Their few constants (a root, Chebyshev and Bernoulli coefficients) are
derived once, at import, with mpmath. lgamma is the standard library's, one
element at a time (C, fast enough). Each derivative is the next function of
the family (lgamma' = digamma, digamma' = polygamma(1), ...), so every order
of derivative is available.

At the special points the values are fixed: erfinv is nan outside [-1, 1],
+-inf at +-1 and +0 at -0; lgamma is inf at its poles (0, -1, -2, ... and
-inf); digamma is -inf at +0, inf at -0, nan at the negative integers and
-inf; polygamma of odd order is inf at the poles and of even order nan,
both nan at -inf; at +inf digamma is inf and polygamma 0.
"""
from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

import mpmath
import numpy as np

from .dispatch import call
from .elementwise import _np_erf, _np_erfc
from .opdef import OPS, defelementwise, public

F = dict(promote=("self",), to_float=True, inplace=True)


def _apply(fn, name, self, *args):
    if np.iscomplexobj(self):
        raise RuntimeError(f"{name} is not implemented for complex tensors")
    x = np.asarray(self, dtype=np.float64).ravel()
    with np.errstate(all="ignore"):        # the special points are set explicitly
        result = fn(x, *args)
    return result.reshape(np.shape(self)).astype(self.dtype, copy=False)


def _elementwise(fn, name):
    def forward(self):
        return _apply(fn, name, self)
    forward.__name__ = name
    return forward


def _two_sum(a, b):
    """a + b as hi + lo exactly (Knuth): a shifted argument's rounding error is
    kept where the function is steep enough for it to show."""
    hi = a + b
    b_part = hi - a
    return hi, (a - (hi - b_part)) + (b - b_part)


def _bernoulli(k):
    return Fraction(*mpmath.bernfrac(k))


# ---------------------------------------------------------------- erfinv

_SQRT_PI_2 = math.sqrt(math.pi) / 2
# erf(x)^2 ~ 1 - exp(-x^2 (4/pi + k x^2) / (1 + k x^2)) is right at both ends;
# k matches the x^4 Taylor term. Solved for x^2 it gives the first guess.
_K = 8 * (math.pi - 3) / (3 * math.pi * (4 - math.pi))


def _erfinv(y):
    a = np.abs(y)
    q = 1 - a                              # exact where it matters (a >= 1/2)
    log = np.log(q * (1 + a))              # log(1 - a^2) without cancelling near 1
    c = 2 / (math.pi * _K) + log / 2
    root = np.sqrt(c * c - log / _K)
    w = np.sqrt(np.where(c > 0, -log / _K / (root + c), root - c))
    # Halley on erf(w) = a: the guess is within 0.35%, so two cubic steps
    # reach double precision. Beyond 1/2 the residual is taken through erfc,
    # so it keeps its relative accuracy as a tends to 1 (q is exact there).
    tail = a > 0.5
    for _ in range(2):
        residual = np.where(tail, q - _np_erfc(w), _np_erf(w) - a)
        step = residual * _SQRT_PI_2 * np.exp(w * w)
        w = w - step / (1 + w * step)
    # the first Taylor term is exact to double precision below 2^-28 (and
    # keeps subnormal inputs out of Halley's subtraction)
    w = np.where(a < 2.0 ** -28, _SQRT_PI_2 * a, w)
    w = np.where(a == 1, np.inf, np.where(a > 1, np.nan, w))
    return np.where(a == 0, 0.0, np.copysign(w, y))


# ---------------------------------------------------------------- digamma

def _digamma_window():
    """The positive root of digamma and Chebyshev coefficients of
    u psi(u) / (u - root) on [0.75, 2.5], where psi is small: factoring the
    root out keeps psi's relative accuracy there, multiplying by u removes
    the pole at 0 (20 terms instead of 31). The constant term is kept as
    hi + lo: its rounding alone would be half an ulp of the result."""
    with mpmath.workdps(40):
        root = mpmath.findroot(mpmath.digamma, 1.46)
        a, b, count = 0.75, 2.5, 22
        nodes = [mpmath.cos(mpmath.pi * (k + 0.5) / count) for k in range(count)]
        us = [(b - a) / 2 * s + (a + b) / 2 for s in nodes]
        values = [u * mpmath.digamma(u) / (u - root) for u in us]
        coeffs = [2 * mpmath.fsum(v * mpmath.cos(mpmath.pi * j * (k + 0.5) / count)
                                  for k, v in enumerate(values)) / count
                  for j in range(count)]
        coeffs[0] /= 2
        return ([float(root), float(root - float(root))],
                [float(coeffs[0]), float(coeffs[0] - float(coeffs[0]))],
                [float(c) for c in coeffs[1:]])


(_ROOT, _ROOT_LO), (_C0, _C0_LO), _WINDOW = _digamma_window()
# psi(x) ~ log x - 1/2x - sum B_2k / (2k x^2k): at x >= 10 the first omitted
# term, B_18 / (18 10^18), is below 2^-56 of psi(10)
_DIGAMMA_SERIES = [float(_bernoulli(2 * k) / (2 * k)) for k in range(1, 9)]


def _psi_window(u, u_lo):
    """psi(u + u_lo) for u in [0.75, 2.5]; u - root is exact there (Sterbenz)."""
    z = (u - _ROOT) + (u_lo - _ROOT_LO)
    s2 = (4 * u - 6.5) / 1.75              # twice the Chebyshev variable
    b1 = b2 = 0.0
    for c in reversed(_WINDOW):            # Clenshaw
        b1, b2 = c + s2 * b1 - b2, b1
    return z * (_C0 + ((s2 / 2 * b1 - b2) + _C0_LO)) / u


def _psi_series(x):
    t = 1 / (x * x)
    return np.log(x) - 0.5 / x - t * np.polyval(_DIGAMMA_SERIES[::-1], t)


def _psi_positive(x):
    """psi(x) for finite x > 0."""
    out = np.empty_like(x)
    big, small = x >= 10, x < 0.75
    out[big] = _psi_series(x[big])
    # psi(x) = psi(x + 1) - 1/x; x + 1 lands in [1, 1.75), where psi is small
    xs = x[small]
    out[small] = _psi_window(*_two_sum(xs, 1.0)) - 1 / xs
    # psi(x) = psi(x - m) + sum 1/(x - j): x - j is exact and psi(x - m) > 0
    # in (1.5, 2.5], so every term is positive (no cancellation)
    mid = ~(big | small)
    xm = x[mid]
    m = np.maximum(np.ceil(xm - 2.5), 0)
    acc = _psi_window(xm - m, 0.0)
    for j in range(1, int(m.max(initial=0)) + 1):
        acc += np.where(j <= m, 1 / (xm - j), 0.0)
    out[mid] = acc
    return out


def _digamma(x):
    out = np.empty_like(x)
    pos = (x > 0) & (x < np.inf)
    out[pos] = _psi_positive(x[pos])
    # reflection: psi(x) = psi(1 - x) - pi cot(pi x). Near its zeros the
    # rounding of 1 - x would show: it is added back as psi'(1 - x) lo, with
    # psi'(u) ~ 1/u + 1/2u^2 + 1/6u^3 (1% off at u = 1, plenty for a correction)
    neg = (x < 0) & (x != np.floor(x))
    xn = x[neg]
    u, u_lo = _two_sum(1.0, -xn)
    slope = (1 + (0.5 + 1 / (6 * u)) / u) / u
    out[neg] = (_psi_positive(u) + u_lo * slope) - _cot_term(0, xn - np.round(xn))
    out[x == np.inf] = np.inf
    out[(x < 0) & ~neg] = np.nan           # negative integers and -inf
    out[x == 0] = -np.copysign(np.inf, x[x == 0])
    out[np.isnan(x)] = np.nan
    return out


# ------------------------------------------- cot and its derivatives (reflection)

_PI_LO = float(mpmath.pi - math.pi)
_PI_A = 134217729.0 * math.pi - (134217729.0 * math.pi - math.pi)   # pi's top 26 bits
_PI_B = math.pi - _PI_A


def _laurent_radius(n):
    """|r| up to which the pole is split off. Beyond it P_n(cot) multiplies
    cot's error by up to n + 1 (so the radius grows with n); near 1/2 the
    next pole cancels this one for even n (so it stays below)."""
    return 0.5 - 0.07 / math.sqrt(max(n, 1))


@lru_cache(maxsize=None)
def _cot_laurent(n):
    """Coefficients, in powers of r^2, of the regular part of
    (d/dr)^n pi cot(pi r) = (-1)^n n! r^-(n+1) - 2 sum_k zeta(2k) (2k-1)!/(2k-1-n)! r^(2k-1-n),
    up to the terms below 2^-57 of the pole at the radius; they rise before
    they fall when n is large. For r > 0 the terms have one sign, so Horner
    does not cancel."""
    coeffs, last, radius = [], 0.0, _laurent_radius(n)
    for k in range((n + 2) // 2, 1000):
        falling = math.prod(range(2 * k - n, 2 * k))
        # (at 30 digits whatever the caller set mpmath.mp.dps to: the coefficients
        # are cached for the process)
        with mpmath.workdps(30):
            coeffs.append(float(-2 * mpmath.zeta(2 * k) * falling))
        size = abs(coeffs[-1]) * radius ** (2 * k) / math.factorial(n)
        if size < 2.0 ** -57 and size < last:
            return coeffs
        last = size
    raise AssertionError(n)


@lru_cache(maxsize=None)
def _cot_polynomial(n):
    """P_n, (d/dy)^n cot y = P_n(cot y), lowest degree first: P_0(t) = t,
    P_(k+1) = -(1 + t^2) P_k'. P_n has the parity of n + 1 and its
    coefficients one sign, so Horner in t^2 does not cancel."""
    poly = [0, 1]
    for _ in range(n):
        deriv = [j * c for j, c in enumerate(poly)][1:]
        poly = [-(deriv[j] if j < len(deriv) else 0) - (deriv[j - 2] if j >= 2 else 0)
                for j in range(len(deriv) + 2)]
    return poly


@lru_cache(maxsize=None)
def _cot_derivative(n):
    """pi^(n+1) P_n's nonzero coefficients, in powers of t^2; pi^(n+1) is
    exact here (math.pi ** (n+1) would be n + 1 roundings of pi off)."""
    with mpmath.workdps(30):
        return [float(c * mpmath.pi ** (n + 1)) for c in _cot_polynomial(n)[(n + 1) % 2::2]]


def _tan_pi(w):
    """tan(pi w) for |w| < 1/4, with pi w carried as hi + lo (Dekker): its
    rounding would add up to 0.6 ulp to tan, and P_n multiplies that by n + 1."""
    y = math.pi * w
    split = 134217729.0 * w
    w_hi = split - (split - w)
    w_lo = w - w_hi
    y_lo = ((_PI_A * w_hi - y) + _PI_A * w_lo + _PI_B * w_hi) + _PI_B * w_lo + _PI_LO * w
    tan = np.tan(y)
    return tan + (1 + tan * tan) * y_lo


def _odd_or_even(coeffs, v, odd):
    """sum_j coeffs[j] v^(2j + odd): Horner in v^2."""
    horner = np.polyval(coeffs[::-1], v * v)
    return horner * v if odd else horner


def _cot_term(n, r):
    """(d/dr)^n pi cot(pi r) for 0 < |r| <= 1/2 (r exact). Near the pole it is
    the pole, which is exact but for one rounding, plus a series; farther,
    pi^(n+1) P_n(cot pi r) with cot = tan(pi (1/2 - |r|)) small, where P_n
    no longer amplifies its argument's error much."""
    out = np.empty_like(r)
    near = np.abs(r) <= _laurent_radius(n)
    rn = r[near]
    out[near] = ((-1) ** n * math.factorial(n)) * rn ** -(n + 1) + _odd_or_even(
        _cot_laurent(n), rn, n % 2 == 0)
    rf = r[~near]
    out[~near] = _odd_or_even(_cot_derivative(n),
                              _tan_pi(np.copysign(0.5 - np.abs(rf), rf)), n % 2 == 0)
    return out


# ---------------------------------------------------------------- polygamma

_MAX_ORDER = 100       # above, Horner's coefficients and n! near overflow: mpmath
_SERIES_TERMS = 10


@lru_cache(maxsize=None)
def _hurwitz_series(n):
    """The asymptotic series of n! zeta(n+1, y) = (n-1)! y^-n (1 + n/2y +
    sum c_k y^-2k), c_k = B_2k (n)_2k / (2k)!, and the y from which its
    first omitted term is below 2^-56."""
    def c(k):
        return _bernoulli(2 * k) * math.prod(range(n, n + 2 * k)) / math.factorial(2 * k)
    k = _SERIES_TERMS + 1
    start = (abs(float(c(k))) * 2.0 ** 56) ** (1 / (2 * k))
    return start, [float(c(k)) for k in range(1, _SERIES_TERMS + 1)]


def _hurwitz(n, a, first):
    """n! sum_{k >= first} (a + k)^-(n+1), for a + first > 0: the recurrence up
    to the series' start, then the series. a + k is taken exactly as hi + lo
    (its rounding would cost n + 1 half-ulps); the smallest terms come first."""
    p = n + 1
    start, coeffs = _hurwitz_series(n)
    steps = np.maximum(np.ceil(start - (a + first)), 0)
    y, y_lo = _two_sum(a, first + steps)
    t = 1 / (y * y)
    bracket = 1 + n / (2 * y) + t * np.polyval(coeffs[::-1], t)
    terms = 0.0
    for j in reversed(range(int(steps.max(initial=0)))):
        hi, lo = _two_sum(a, first + j)
        terms += np.where(j < steps, hi ** -p * (1 - p * lo / hi), 0.0)
    tail = bracket * (1 - n * y_lo / y) / y ** n     # y ** 1 is exact, y ** -1 not
    return math.factorial(n - 1) * tail + math.factorial(n) * terms


def _mp_polygamma(n, x):
    """mpmath, one element at a time. Its polygamma loops up from very
    negative x, so the reflection is done here."""
    def one(v):
        if v > 0:
            return mpmath.polygamma(n, v)
        # cospi is exactly 0 at half-integers, where P_n's big coefficients
        # would blow up cot's rounding
        cot = mpmath.polyval(_cot_polynomial(n)[::-1], mpmath.cospi(v) / mpmath.sinpi(v))
        return (-1) ** n * mpmath.polygamma(n, 1 - mpmath.mpf(v)) - mpmath.pi ** (n + 1) * cot
    with mpmath.workdps(40):
        return np.array([float(one(v)) for v in x.tolist()])


def _polygamma(x, n):
    if n == 0:
        return _digamma(x)
    sign = 1.0 if n % 2 else -1.0           # psi^(n) = (-1)^(n+1) n! zeta(n+1, x)
    out = np.empty_like(x)
    pos = (x > 0) & (x < np.inf)
    neg = (x < 0) & (x != np.floor(x))
    # where y^-n underflows (huge x, large n) the terms lose their precision
    slow = (pos | neg) & ((n > _MAX_ORDER) | (n * np.log(np.abs(x) + 1) > 700))
    pos, neg = pos & ~slow, neg & ~slow
    out[pos] = sign * _hurwitz(n, x[pos], 0)
    # reflection: psi^(n)(x) = -(d/dx)^n pi cot(pi x) - n! zeta(n+1, 1 - x),
    # with 1 - x summed as -x from k = 1 (exactly)
    xn = x[neg]
    out[neg] = -_cot_term(n, xn - np.round(xn)) - _hurwitz(n, -xn, 1)
    out[slow] = _mp_polygamma(n, x[slow])
    out[x == np.inf] = 0.0
    out[(x <= 0) & (x == np.floor(x))] = np.inf if n % 2 else np.nan   # the poles
    out[np.isnan(x) | (x == -np.inf)] = np.nan
    return out


# ---------------------------------------------------------------- lgamma

_math_lgamma = np.frompyfunc(math.lgamma, 1, 1)


def _lgamma(x):
    out = np.full_like(x, np.inf)                             # the poles
    regular = ~((x <= 0) & (x == np.floor(x)))
    # near the top of the float range lgamma overflows: inf, as in PyTorch
    # (math.lgamma raises there)
    huge = regular & (x > 2.5e305)
    regular &= ~huge
    out[regular] = _math_lgamma(x[regular])
    out[huge] = [_lgamma_or_inf(v) for v in x[huge]]
    return out


def _lgamma_or_inf(v: float) -> float:
    try:
        return math.lgamma(v)
    except OverflowError:
        return math.inf


defelementwise("erfinv", _elementwise(_erfinv, "erfinv"),
               lambda result: (result * result).exp() * (math.sqrt(math.pi) / 2), **F)
defelementwise("lgamma", _elementwise(_lgamma, "lgamma"), lambda self: self.digamma(), **F)
defelementwise("digamma", _elementwise(_digamma, "digamma"),
               lambda self: call(OPS["polygamma"], self, 1), **F)


def _polygamma_forward(self, n):
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return _apply(_polygamma, "polygamma", self, int(n))


defelementwise("polygamma", _polygamma_forward,
               lambda self, n: call(OPS["polygamma"], self, n + 1), method=None,
               function=False, **F)


@public("polygamma", method=False)
def polygamma(n, input):
    """The ``n``-th derivative of digamma at ``input``."""
    return call(OPS["polygamma"], input, n)


@public("polygamma", function=False)
def polygamma_method(self, n):
    """``polygamma(n, self)``."""
    return call(OPS["polygamma"], self, n)
