"""An mpmath reference applied entry by entry, each distinct entry computed once.

The reference check differentiates a black-box reference one input coordinate
at a time (``gradcheck.numerics.reference.mp_column``): two calls per
coordinate, each on the whole input with that one entry moved. For an
entrywise op of n entries that is 2 n calls of n entries each, 2 n^2 mpmath
evaluations at 60 digits, of which only 2 n are of a moved entry; the rest
recompute the entries of the given point again and again (a tenth of a
registry sweep's time went there).

``entrywise(fn)`` keeps what ``fn`` gave for each entry: the same mpmath
value (and the same other arguments) at the same working precision gives the
same result, so a kept one is returned as it is (an ``mpf`` is immutable).
A key holds each argument's type and exact value (an ``mpf``'s mantissa and
exponent), so 2, 2.0, ``mpf(2)`` and ``mpc(2)`` are kept apart. Results are
identical to calling ``fn`` on every entry; only their number changes.

``slicewise(fn)`` does the same for a reduction's ``fn`` of one slice (a list
of entries): moving one coordinate changes one slice, and the others, the
same values again, are taken as kept.
"""
from __future__ import annotations

import mpmath
import numpy as np

#: entries (or slices) kept per reference before it forgets them all (a sample has hundreds)
KEPT = 4096


def _exact(value):
    """A hashable key of ``value``: its type and exact value."""
    raw = getattr(value, "_mpf_", None)
    if raw is None:
        raw = getattr(value, "_mpc_", None)
    return type(value), value if raw is None else raw


def _key(args: tuple, kwargs: dict):
    """The exact key of a call's arguments at the working precision; raises
    ``TypeError`` when one is no number."""
    key = (mpmath.mp.prec, tuple(_exact(a) for a in args),
           tuple((k, _exact(v)) for k, v in kwargs.items()))
    hash(key)
    return key


def _kept(fn, key_of):
    """``fn`` with each result kept by ``key_of(args, kwargs)`` (a call whose
    key raises ``TypeError``, an argument that is no number, is not kept)."""
    kept: dict = {}

    def once(*args, **kwargs):
        try:
            key = key_of(args, kwargs)
        except TypeError:
            return fn(*args, **kwargs)
        if key not in kept:
            if len(kept) >= KEPT:
                kept.clear()
            kept[key] = fn(*args, **kwargs)
        return kept[key]
    return once


def entrywise(fn):
    """``fn`` over every entry of its (broadcast) array arguments, as
    ``np.vectorize(fn, otypes=[object])`` gives it, with each distinct entry
    computed once (see the module docstring)."""
    return np.vectorize(_kept(fn, _key), otypes=[object])


def slicewise(fn):
    """``fn`` of a list of entries (and keyword numbers), each distinct list
    computed once (see the module docstring)."""
    # (every call has one list: its entries flattened into the key are unambiguous)
    return _kept(fn, lambda args, kwargs: _key(tuple(args[0]) + args[1:], kwargs))
