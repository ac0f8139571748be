"""erfinv, digamma and polygamma against mpmath at 50 digits, over their
domains, and every function's values at its special points, exactly.

Errors are in units of EPS = 2^-52: relative where the function has no zero
nearby; where it has (digamma and even orders of polygamma on the negative
axis), relative to the size of the terms that cancel there, since no
float64 algorithm without extra precision does better. Each bound is the
measured maximum with some margin for other platforms' libm.
"""
from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

import adcheck.refengine as E

EPS = 2.0 ** -52
TINY = 2.0 ** -1022          # subnormal results are measured in these units


def _log_uniform(rng, lo, hi, size):
    return np.exp(rng.uniform(math.log(lo), math.log(hi), size))


def _signed(rng, values):
    return values * rng.choice([-1.0, 1.0], values.size)


def _near_poles(rng, size, lo=1e-12, hi=1e-2):
    return -rng.integers(0, 20, size) + _signed(rng, _log_uniform(rng, lo, hi, size))


def _digamma_negative_zeros():
    """The zero of digamma in each (-k-1, -k), and points within 1e-6 of it."""
    with mpmath.workdps(30):
        zeros = [float(mpmath.findroot(mpmath.digamma, (-k - 1 + 1e-3, -k - 1e-3),
                                       solver="illinois")) for k in range(20)]
    offsets = np.linspace(-1e-6, 1e-6, 11)
    return np.concatenate([z + offsets for z in zeros] + [np.array(zeros)])


def _digamma_scale(v):
    """The terms of the reflection psi(x) = psi(1 - x) - pi cot(pi x)."""
    return abs(mpmath.digamma(1 - v)) + abs(mpmath.pi * mpmath.cospi(v) / mpmath.sinpi(v))


def _polygamma_scale(n):
    """n! sum_k |x + k|^-(n+1): the series of psi^(n)(x) with its terms'
    signs dropped (for odd n, |psi^(n)(x)| itself)."""
    def scale(v):
        whole = mpmath.floor(-v)
        frac = -v - whole                       # x = -whole - frac
        return mpmath.factorial(n) * (mpmath.zeta(n + 1, frac) + mpmath.zeta(n + 1, 1 - frac)
                                      - mpmath.zeta(n + 1, whole + 1 + frac))
    return scale


def _max_error(ours, x, reference, scale=None):
    """The largest error in EPS and where; a reference that overflows
    float64 must be matched exactly."""
    worst, at = 0.0, None
    with mpmath.workdps(50):
        for value, v in zip(ours.tolist(), x.tolist()):
            exact = reference(mpmath.mpf(v))
            if not math.isfinite(float(exact)):
                assert value == float(exact), (v, value, exact)
                continue
            size = scale(mpmath.mpf(v)) if scale else max(abs(exact), TINY)
            error = float(abs(mpmath.mpf(value) - exact) / size) / EPS
            if error > worst:
                worst, at = error, v
    return worst, at


def _t(x):
    return E.tensor(x, dtype=E.float64)


def _erfinv(x):
    return E.erfinv(_t(x)).numpy()


def _digamma(x):
    return E.digamma(_t(x)).numpy()


def _polygamma(n):
    return lambda x: E.polygamma(n, _t(x)).numpy()


def _mp_polygamma(n):
    return lambda v: mpmath.polygamma(n, v)


ROOT = 1.4616321449683623       # digamma's positive zero

#: (id, function, mpmath reference, points from an rng, bound in EPS, scale or None)
ACCURACY = [
    ("erfinv", _erfinv, mpmath.erfinv, lambda rng: rng.uniform(-1, 1, 1000), 1.5, None),
    ("erfinv-tiny", _erfinv, mpmath.erfinv,
     lambda rng: _signed(rng, _log_uniform(rng, 1e-320, 1e-3, 300)), 1.5, None),
    ("erfinv-near-1", _erfinv, mpmath.erfinv,
     lambda rng: np.concatenate([_signed(rng, 1 - _log_uniform(rng, 1e-16, 0.5, 700)),
                                 [1 - 2.0 ** -53, -1 + 2.0 ** -53, 1 - 2.0 ** -52]]), 1.5, None),
    ("erfinv-erf-to-erfc", _erfinv, mpmath.erfinv,
     lambda rng: rng.uniform(0.45, 0.55, 200), 1.5, None),
    ("digamma", _digamma, mpmath.digamma, lambda rng: rng.uniform(0, 12, 800), 2.0, None),
    ("digamma-root", _digamma, mpmath.digamma,
     lambda rng: ROOT + _signed(rng, _log_uniform(rng, 1e-16, 0.5, 500)), 2.0, None),
    ("digamma-tiny", _digamma, mpmath.digamma,
     lambda rng: _log_uniform(rng, 1e-310, 1e-3, 300), 2.0, None),
    ("digamma-large", _digamma, mpmath.digamma,
     lambda rng: _log_uniform(rng, 10, 1e300, 400), 2.0, None),
    ("digamma-negative", _digamma, mpmath.digamma,
     lambda rng: -rng.uniform(0, 20, 600), 2.0, _digamma_scale),
    ("digamma-near-poles", _digamma, mpmath.digamma, lambda rng: _near_poles(rng, 400),
     2.0, _digamma_scale),
    ("digamma-near-zeros", _digamma, mpmath.digamma, lambda rng: _digamma_negative_zeros(),
     2.0, _digamma_scale),
    ("digamma-negative-large", _digamma, mpmath.digamma,
     lambda rng: -_log_uniform(rng, 20, 1e10, 300), 2.0, _digamma_scale),
]
for _n, _size in ((1, 300), (2, 300), (3, 300), (4, 300), (7, 100), (30, 50)):
    ACCURACY += [
        (f"polygamma{_n}", _polygamma(_n), _mp_polygamma(_n),
         lambda rng, size=_size: rng.uniform(0, 30, size), 2.0, None),
        (f"polygamma{_n}-tiny", _polygamma(_n), _mp_polygamma(_n),
         lambda rng, size=_size: _log_uniform(rng, 1e-100, 1e-3, size // 3), 2.0, None),
        (f"polygamma{_n}-large", _polygamma(_n), _mp_polygamma(_n),
         lambda rng, size=_size: _log_uniform(rng, 30, 1e10, size // 2), 2.0, None),
        (f"polygamma{_n}-negative", _polygamma(_n), _mp_polygamma(_n),
         lambda rng, size=_size: -rng.uniform(0, 20, size), 2.0, _polygamma_scale(_n)),
        (f"polygamma{_n}-near-poles", _polygamma(_n), _mp_polygamma(_n),
         lambda rng, size=_size: _near_poles(rng, size // 2, 1e-10), 2.0, _polygamma_scale(_n)),
    ]


@pytest.mark.parametrize("fn, reference, points, bound, scale",
                         [pytest.param(*row[1:], id=row[0]) for row in ACCURACY])
def test_accuracy_against_mpmath(fn, reference, points, bound, scale):
    x = points(np.random.default_rng(0))
    worst, at = _max_error(fn(x), x, reference, scale)
    assert worst <= bound, f"error {worst:.2f} EPS at x = {at!r} (bound {bound})"


def test_polygamma_beyond_the_float_algorithm_matches_mpmath():
    # order > 100, and y^-n underflowing at huge x: mpmath, with the
    # reflection done outside it (its own loops up from very negative x)
    x = np.array([0.3, 7.5, -0.7, -5.5, -40.25, 1e15 + 0.5])
    for n in (120, 121):
        with mpmath.workdps(400):
            expected = [float(mpmath.polygamma(n, v)) for v in x]
        np.testing.assert_allclose(E.polygamma(n, _t(x)).numpy(), expected, rtol=4 * EPS)
    far = np.array([-1e15 + 0.5, -4503599627370495.5])
    assert np.all(np.isfinite(E.polygamma(25, _t(far)).numpy()))


INF, NAN = math.inf, math.nan
#: (function, argument, value); the sign of a zero counts
SPECIAL = [
    (E.erfinv, [NAN, 1.5, -1.5, INF, -INF], NAN),
    (E.erfinv, [1.0], INF), (E.erfinv, [-1.0], -INF),
    (E.erfinv, [0.0, -0.0], 0.0),
    (E.erfinv, [5e-324], 5e-324), (E.erfinv, [-5e-324], -5e-324),
    (E.lgamma, [0.0, -0.0, -1.0, -2.0, -1e20, INF, -INF], INF),
    (E.lgamma, [NAN], NAN), (E.lgamma, [1.0, 2.0], 0.0),
    (E.digamma, [0.0], -INF), (E.digamma, [-0.0], INF),
    (E.digamma, [-1.0, -2.0, -2.0 ** 52, -1e300, -INF, NAN], NAN),
    (E.digamma, [INF], INF), (E.digamma, [5e-324], -INF),     # -1/x overflows
    (lambda t: E.polygamma(1, t), [0.0, -0.0, -1.0, -7.0, -2.0 ** 60], INF),
    (lambda t: E.polygamma(3, t), [0.0, -3.0], INF),
    (lambda t: E.polygamma(2, t), [0.0, -0.0, -1.0, -7.0], NAN),
    (lambda t: E.polygamma(1, t), [-INF, NAN], NAN),
    (lambda t: E.polygamma(2, t), [-INF, NAN], NAN),
    (lambda t: E.polygamma(1, t), [INF], 0.0), (lambda t: E.polygamma(2, t), [INF], 0.0),
    (lambda t: E.polygamma(2, t), [1e200], -0.0),
    (lambda t: E.polygamma(1, t), [1e-200, -1e-200], INF),
    (lambda t: E.polygamma(2, t), [1e-200], -INF), (lambda t: E.polygamma(2, t), [-1e-200], INF),
]


@pytest.mark.parametrize("fn, x, expected", SPECIAL)
def test_special_points(fn, x, expected):
    got = fn(_t(np.array(x))).numpy()
    want = np.full(len(x), expected)
    assert np.array_equal(got, want, equal_nan=True), (x, got)
    numbers = ~np.isnan(want)
    assert np.array_equal(np.signbit(got[numbers]), np.signbit(want[numbers])), (x, got)


@pytest.mark.parametrize("fn", [E.erfinv, E.lgamma, E.digamma, lambda t: E.polygamma(3, t)])
def test_float32_is_computed_in_float64_and_rounded_once(fn):
    x = np.random.default_rng(1).uniform(-0.99, 0.99, 50).astype(np.float32) * (
        1 if fn is E.erfinv else 8)
    got = fn(E.tensor(x, dtype=E.float32))
    assert got.dtype == E.float32
    np.testing.assert_array_equal(got.numpy(), fn(_t(x.astype(np.float64))).numpy()
                                  .astype(np.float32))


@pytest.mark.parametrize("fn", [E.erfinv, E.lgamma, E.digamma, lambda t: E.polygamma(2, t)])
def test_shapes_are_kept(fn):
    for x in (np.array(0.25), np.zeros((0, 3)), np.full((2, 3, 1), 0.5)):
        assert fn(_t(x)).shape == x.shape


@pytest.mark.parametrize("fn", [E.erfinv, E.lgamma, E.digamma, lambda t: E.polygamma(1, t)])
def test_complex_inputs_raise(fn):
    with pytest.raises(RuntimeError, match="not implemented for complex tensors"):
        fn(E.tensor(np.array([0.5 + 1j])))


def test_polygamma_of_negative_order_raises():
    with pytest.raises(RuntimeError, match="does not support negative n"):
        E.polygamma(-1, _t(np.array([1.0])))


def test_lgamma_overflows_to_inf_like_torch(torch):
    values = [2.4e305, 2.6e305, 1e308]
    ours = E.lgamma(E.tensor(values, dtype=E.float64)).numpy()
    theirs = torch.lgamma(torch.tensor(values, dtype=torch.float64)).numpy()
    assert np.isinf(ours[1:]).all() and np.isinf(theirs[1:]).all()
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-15)


def test_polygamma_near_its_poles_whatever_precision_mpmath_was_left_at():
    # the coefficients of cot's Laurent series are computed once and cached: at
    # mpmath's precision of the moment they were rounded to 3 digits when a
    # program had set mpmath.mp.dps = 3 (mpmath.zeta(2) = 1.64 for 1.6449...)
    from adcheck.refengine.ops import special
    x = np.array([-0.5 + 1e-3, -1.5 - 2e-3, -2.25 + 1e-4])
    before = mpmath.mp.dps
    special._cot_laurent.cache_clear()
    try:
        mpmath.mp.dps = 3
        got = E.polygamma(1, _t(x)).numpy()
    finally:
        mpmath.mp.dps = before
        special._cot_laurent.cache_clear()
    with mpmath.workdps(50):
        want = np.array([float(mpmath.polygamma(1, mpmath.mpf(v))) for v in x])
    np.testing.assert_allclose(got, want, rtol=1e-13)
