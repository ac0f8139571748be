"""Exit statuses of ``adcheck``: one enum, as ruff does it."""
from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0             # every check passed
    FAILED = 1         # a check failed (a wrong formula)
    USAGE = 2          # the user called us wrong, or gave bad input
    INTERRUPTED = 130  # Ctrl-C; the partial report was written
