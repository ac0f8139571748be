"""A task's deadline inside the worker: ``TaskTimeout`` raised in the code it runs.

Below the pool, the run loop and the tasks, which all use it (the tasks to
bound what they run, the command line's input probe too), so that none of
them imports another for it.
"""
from __future__ import annotations

from contextlib import contextmanager


class TaskTimeout(BaseException):
    """A task ran past its deadline. A ``BaseException``, so that code under
    test catching ``Exception`` cannot swallow it."""

    def __init__(self, seconds: float):
        super().__init__(f"timed out after {seconds:g}s")
        self.seconds = seconds


@contextmanager
def deadline(seconds: float | None):
    """Raise ``TaskTimeout`` in the block after ``seconds`` (no limit if None/0;
    see ``gradcheck.core.interrupt``)."""
    if not seconds:
        yield
        return
    from adcheck.gradcheck.core.interrupt import interrupting
    with interrupting(seconds, lambda: TaskTimeout(seconds)) as alarm:
        try:
            yield
        except Exception as exc:
            if alarm.expired:   # (wrapped by the code under check: jax.pure_callback's)
                raise TaskTimeout(seconds) from exc
            raise
