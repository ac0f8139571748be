"""A hard stop for one explored point: ``deadline(seconds)``.

A function may hang at a point the catalogue builds (a loop that never
converges at 1e300): ``gradcheck.core.interrupt`` stops it with ``Timeout``
where a timer can; elsewhere the point runs unbounded and the budget is
checked between points.
"""
from __future__ import annotations

from adcheck.gradcheck.core.interrupt import interrupting


class Timeout(BaseException):
    """An explored point ran past its time."""


def deadline(seconds: float):
    """Raise ``Timeout`` in the body after ``seconds`` (see the module docstring)."""
    return interrupting(seconds, Timeout)
