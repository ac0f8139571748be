"""torch on one intra-op thread while adcheck checks outside the runner's
workers: the command's harvest (``cli.harvest``) and the pytest plugin's
checks in pytest-xdist's workers (``pytest_adcheck.threads``), as the
runner's workers compute for their whole life (``runner.worker._one_thread``).

torch's default is a thread per core in every process. Several processes
each checking small tensors then oversubscribe the cores, and torch's OpenMP
threads spin waiting for each other: two pytest-xdist workers checking
instance_norm, batch_norm and conv2d of op_db took 38 to 123 s of test time
on 2 cores beside another job, 2 to 3 s on one thread each. The samples
checked are small, so one thread loses nothing worth having.
"""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager


@contextmanager
def one_torch_thread():
    """torch on one thread inside, its count put back after; nothing changes
    where torch is not imported or ``OMP_NUM_THREADS`` gives the user's count."""
    torch = sys.modules.get("torch")
    if torch is None or os.environ.get("OMP_NUM_THREADS"):
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
