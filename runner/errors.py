"""The runner's one exception family for bad input.

Everything the runner refuses because of what it was asked to do (an op
name that is not in the registry, an unknown family, a plugin that does not
load, a malformed input spec, a target that is not a function, a baseline
that is not one) raises a ``RunnerError`` whose message names the cause and
the fix in one line. The CLI turns it into its own usage error (exit status
2); the pytest plugin into a collection error. Faults of the code under check
are never ``RunnerError``s: they are results (an "error" status).
"""
from __future__ import annotations


class RunnerError(ValueError):
    """Bad input to the runner; ``str(exc)`` is one line saying what to do."""

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))


class PluginError(RunnerError):
    """A plugin file could not be loaded (missing, not Python, raised on import)."""


class WorkerError(RunnerError):
    """The worker processes cannot run the tasks at all (they fail to start, or
    cannot load a plugin that loads in this process); the message says why."""
