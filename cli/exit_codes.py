"""Exit statuses of ``adcheck``: one enum (the runner's), as ruff does it."""
from adcheck.runner.results import ExitCode

__all__ = ["ExitCode"]
