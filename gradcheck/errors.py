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


class UncheckableError(ValueError):
    """The call has nothing gradcheck can check, as given: no input requires grad,
    no output depends on one, NumPy arrays, integer or sparse tensors, a dtype or
    a mode the engine cannot run. A ``ValueError``; a sweep reports such a check
    as skipped with this message, where any other exception is an error."""


class NoDoubleBackward(RuntimeError):
    """The backward of the function raised when asked to build a graph
    (``create_graph=True``), as a backward computed in NumPy does: the function
    has no double backward. Raised by a second-order check's first derivative
    (``gradcheck.core.secondorder``), with the backward's exception as its cause."""
