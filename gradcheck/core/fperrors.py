"""NumPy's floating-point error handling during adcheck's own computations.

adcheck's arithmetic meets inf, NaN and underflow at extreme inputs (1e-300,
1e300: the explore search goes there on purpose) and tests for them itself;
it is written for NumPy's default handling of those errors. A caller's
``np.seterr(all="raise")``, a test suite's common setting, made every check
with ``explore=True`` raise FloatingPointError out of that arithmetic. During
a check (``api.run``) and the public Jacobian functions, an error the caller
set to raise (or to hand to a function) is handled as NumPy's default does;
the rest of the caller's setting stands, and all of it is back afterwards.
"""
from __future__ import annotations

import functools

import numpy as np

#: NumPy's default handling of each kind of floating-point error
NUMPY_DEFAULT = {"divide": "warn", "over": "warn", "under": "ignore", "invalid": "warn"}


def defaults_for_raising():
    """A context: the caller's NumPy error handling, but NumPy's default for
    each kind the caller set to raise, call or log."""
    return np.errstate(**{kind: NUMPY_DEFAULT[kind] if how in ("raise", "call", "log")
                          else how for kind, how in np.geterr().items()})


def guarded(func):
    """``func`` run inside ``defaults_for_raising()``."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with defaults_for_raising():
            return func(*args, **kwargs)
    return wrapper
