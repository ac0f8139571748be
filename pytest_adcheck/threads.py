"""The plugin's checks on one torch thread in each of several pytest-xdist
workers (``runner.threads``): pytest's process is the worker there, with
torch's default of a thread per core, and the workers together would
oversubscribe the cores. Without xdist, or with one worker, torch keeps its
threads (the process has the cores to itself)."""
from __future__ import annotations

from contextlib import nullcontext

#: how many pytest-xdist workers run the session this process is one of (0: this
#: process is no xdist worker), set by the plugin's ``pytest_configure`` from
#: xdist's own ``workerinput`` (an environment variable would be inherited by a
#: pytest the tests start, which runs alone)
WORKERS = [0]


def seen(config) -> None:
    """Record whether ``config``'s session is one worker of several."""
    workerinput = getattr(config, "workerinput", None)
    WORKERS[0] = int(workerinput.get("workercount", 0)) if workerinput else 0


def checking():
    """The context the plugin's checks run in: one torch thread beside other
    pytest-xdist workers, else nothing changed."""
    if WORKERS[0] < 2:
        return nullcontext()
    from adcheck.runner.threads import one_torch_thread
    return one_torch_thread()
