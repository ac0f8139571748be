"""The exception gradcheck raises."""
from __future__ import annotations


class GradcheckError(RuntimeError):
    """A check failed, or the function could not be checked.

    ``report`` is the ``Report`` of the failing check (``None`` when the
    function could not be run at all, for example because it raised).
    """

    def __init__(self, message: str, report=None):
        super().__init__(message)
        self.report = report
