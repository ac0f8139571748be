"""NumPy's invalid-operation warnings switched off and back, cheaply.

``np.errstate(invalid="ignore")`` builds a new error state on every entry,
about as costly as the small array operation it wraps (1 us), and the
comparisons of a check enter it a dozen times. ``quiet()`` switches to the
same state, built once per state it is derived from, and returns the token
``restore`` takes back: the same warnings as under ``np.errstate``, no others
silenced. Imports nothing from gradcheck.

    token = quiet()
    try:
        err = np.abs(actual - expected)   # inf - inf: NaN, no warning
    finally:
        restore(token)
"""
from __future__ import annotations

import numpy as np

try:
    # NumPy 2 keeps the error state in a context variable. These names are
    # private: they are tried once here, and any NumPy where they are missing
    # or behave otherwise gets np.errstate itself
    from numpy._core.umath import _extobj_contextvar as _STATE
    from numpy._core.umath import _make_extobj
    _STATE.reset(_STATE.set(_make_extobj(invalid="ignore")))
except Exception:   # older or newer NumPy: np.errstate itself
    def quiet():
        """Ignore invalid operations until ``restore(token)``; returns the token."""
        state = np.errstate(invalid="ignore")
        state.__enter__()
        return state

    def restore(token) -> None:
        """Put back the error state ``quiet`` replaced."""
        token.__exit__(None, None, None)
else:
    #: (a state, its version with invalid operations ignored)
    _derived = (None, None)

    def quiet():
        """Ignore invalid operations until ``restore(token)``; returns the token."""
        global _derived
        current = _STATE.get()
        seen, derived = _derived
        if current is not seen:
            # the other settings (divide, over, under, the call) stay the current ones
            derived = _make_extobj(invalid="ignore")
            _derived = (current, derived)
        return _STATE.set(derived)

    restore = _STATE.reset
