"""Worker processes for the task runner: a warm pool, isolated, bounded in time.

Every task of a run goes to a worker process (``runner.worker``), so the
death of the code under check (``sys.exit``, ``os._exit``, a segmentation
fault, the out-of-memory killer) cannot take the run with it. The workers
are started once with ``spawn`` (safe with torch's thread pools, which
``fork`` is not), import the libraries once, and are reused task after
task, run after run (``shared_pool()``); ``bench/worker_bench.py`` measures
what that costs.

The parent (``runner.runloop.RunLoop``) waits on the workers' pipes and on their process
sentinels at once, so it sees every message and every death as it happens:

- a worker that dies while it runs a task makes that task an error naming
  the cause (``runner.deaths``), within a moment; the samples it had already
  sent are kept, and a fresh worker takes its place;
- a task that runs past ``timeout`` is stopped inside the worker (SIGALRM
  raises ``TaskTimeout``, see ``runner.deadline``); one that does not return to
  Python, or swallows that exception, is killed by the parent ``GRACE``
  seconds later, whatever it is doing in C;
- a worker that cannot start, or cannot load a plugin that loads in this
  process, ends the run with status "broken" and the cause, said once
  (a worker that fails so is not replaced: no storm of restarts);
- Ctrl-C (and SIGTERM, SIGHUP as the CLI maps them to it) reaches this
  process only: the workers ignore those signals, are killed with SIGKILL
  (quietly), and the run returns "interrupted" with what had arrived.
"""
from __future__ import annotations

import atexit
import gc
import multiprocessing
import signal
import threading
import time
from contextlib import contextmanager
from multiprocessing import connection  # noqa: F401 - see shared_pool

from adcheck.runner import deaths

#: seconds past ``timeout`` before the parent kills a worker that did not stop
GRACE = 1.0
#: seconds between looks at a busy worker (its memory, its deadline)
POLL = 0.25
#: seconds a new worker may take to import the libraries before it counts as failed
START_LIMIT = 120.0


def hard_deadline(timeout: float) -> float:
    """Seconds after dispatch at which the parent kills a worker still on its task."""
    return timeout + max(GRACE, 0.1 * timeout)


_STOPS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


@contextmanager
def held_signals():
    """Hold SIGINT, SIGTERM and SIGHUP (they stay pending) in the block: a
    worker started here inherits them held until it ignores them, and the
    pool's bookkeeping is not cut in half."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


#: bytes of the board a worker writes the key of its explored point on (keys are
#: 20 hex digits: ``gradcheck.explore.watch.point_key``; one byte more ends the text)
BOARD_BYTES = 64


class Worker:
    """The parent's handle on one worker process."""

    def __init__(self, context):
        from adcheck.runner.worker import main
        self.conn, child = context.Pipe()
        # the explored point the worker is at, written by it in memory shared with
        # this process, read only when it dies: a message per point woke this
        # process twice a point (11,000 points in a sweep of the registry, each
        # wake a read of both workers' memory; 5 % of the workers' time went into
        # sending them)
        self.board = context.RawArray("c", BOARD_BYTES)
        with held_signals():
            self.process = context.Process(target=main, args=(child, self.board), daemon=True,
                                           name="adcheck-worker")
            self.process.start()
        child.close()
        self.born = time.monotonic()
        self.ready, self.failure, self.dead = False, None, False
        self.task, self.since, self.kill_at = None, 0.0, None
        self.last_sample, self.samples = None, 0
        self.watched = 0.0
        self.evidence = deaths.Evidence()

    @property
    def point(self) -> str | None:
        """The explored point it is at (``gradcheck.explore.watch``), if any."""
        return self.board.value.decode() or None

    def assign(self, task, available: int | None) -> None:
        timeout = task.settings.timeout
        self.task, self.since = task, time.monotonic()
        self.kill_at = self.since + hard_deadline(timeout) if timeout else None
        self.last_sample, self.samples = None, 0
        self.board.value = b""
        self.watched = 0.0
        self.evidence = deaths.Evidence(deaths.oom_kills(), available=available)

    def watch(self) -> None:
        """Note the busy worker's peak memory (evidence if it is killed), at most
        once per ``POLL`` seconds (the parent wakes for every sample it sends)."""
        now = time.monotonic()
        if now - self.watched < POLL:
            return
        self.watched = now
        peak = deaths.resident_memory(self.process.pid)
        if peak is not None:
            self.evidence.peak_rss = max(peak, self.evidence.peak_rss or 0)

    def kill(self) -> None:
        try:
            self.process.kill()
        except (OSError, ValueError):
            pass
        self.reap()

    def reap(self) -> int | None:
        self.process.join(timeout=10)
        self.conn.close()
        self.dead = True
        return self.process.exitcode


#: what the fork server imports once, so that a new worker starts warm: the
#: libraries, not ``opinfo`` (its entry points may import anything, torch included,
#: whose thread pools must not be forked)
PRELOAD = ["numpy", "numpy.ma", "adcheck.refengine", "adcheck.gradcheck", "adcheck.runner.tasks",
           "adcheck.runner.worker", "adcheck.runner.reproduction"]
#: what the fork server imports after its preload: it freezes what the server holds
FREEZE = "adcheck.runner.frozen"

#: what a check of torch code imports besides: torch, the module torch's first
#: ``autograd.grad`` imports (symbolic shapes, with sympy: 0.3 s) and gradcheck's
#: torch adapter (``WorkerPool.forking_here`` imports them before forking)
TORCH_PRELOAD = ["torch", "torch.fx.experimental.symbolic_shapes",
                 "adcheck.gradcheck.engines.torch"]
#: what a check of JAX code imports besides (3 s on a slow machine), in the fork
#: server: it starts no JAX backend, whose threads a fork would not carry over
JAX_PRELOAD = ["jax", "jax.numpy", "adcheck.gradcheck.engines.jax"]


def _context(preload: list):
    """Fork server where there is one (a new worker is a fork of a process that
    has imported ``preload``: milliseconds), else spawn (a fresh interpreter)."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(preload + [FREEZE])
        return context
    return multiprocessing.get_context("spawn")


def _stop_fork_server() -> bool:
    """Stop this process's fork server (the next worker starts a new one, with the
    preload set then); False where multiprocessing offers no way to."""
    from multiprocessing import forkserver
    stop = getattr(getattr(forkserver, "_forkserver", None), "_stop", None)
    if stop is None:
        return False
    stop()
    return True


class WorkerPool:
    """Warm worker processes, kept between runs; ``run`` one run at a time."""

    def __init__(self):
        self.preload = list(PRELOAD)
        self.context = _context(self.preload)
        self.workers: list = []
        self._available = deaths.available_memory()

    def warm(self, modules) -> None:
        """Make the workers start with ``modules`` imported too (a registry's
        ``preload``): the fork server imports them once, and every worker forked
        from it has them. The fork server, and with it every worker (its children),
        restarts when it lacks one; it starts now, in the background, so that it
        imports while this process goes on (``multiprocessing``'s fork server is
        one per process: the preload only ever grows)."""
        missing = [m for m in modules if m not in self.preload]
        if not missing or self.context.get_start_method() != "forkserver":
            return
        self.shutdown()
        if not _stop_fork_server():
            return
        self.preload += missing
        self.context.set_forkserver_preload(self.preload + [FREEZE])
        self.start_server()

    def start_server(self) -> bool:
        """Start the fork server now, without waiting for it: it imports the
        libraries (``preload``) while this process goes on (its own imports, the
        plan), and the workers forked from it later start warm. False where
        workers are not forked from a server (``prestart`` them instead).
        (Starting a worker waits until the server has imported everything and
        forked it: started early, it held the command up for as long.)"""
        if self.context.get_start_method() != "forkserver":
            return False
        from multiprocessing import forkserver
        forkserver.ensure_running()
        return True

    def prestart(self, count: int) -> None:
        """Start workers until ``count`` are alive (they import in the background)."""
        while len(self.workers) < count:
            self.workers.append(Worker(self.context))

    @contextmanager
    def forking_here(self, count: int = 0, probe: bool = True, freeze: bool = False):
        """In the block, the workers are forks of this process, which has
        imported torch and the code under check already: a worker then imports
        neither again (a fork server would import torch a second time, as long
        as this process did, and twice the CPU on a busy machine). Each worker
        stays a process of its own, so a crash or a hang in the code under
        check is still that task's error. Safe as long as this process has run
        no parallel torch computation, whose threads a fork would not carry
        over (the command line only imports the file and builds its module;
        its probes run in forks), and a worker computes on one thread (see
        ``runner.worker``). What the worker's first check would import is
        imported here first (``PRELOAD``, ``TORCH_PRELOAD``). After the block
        those workers are stopped (they hold this moment's state, the user's
        module included) and the next ones come from the fork server again.
        ``count`` workers are started at once. Where torch's backward no longer
        runs in a fork of this process (``torch_backward_forks``, tried when
        ``probe``: the command line's own process, which runs no backward before
        its workers, need not), the block's workers come from the fork server as
        any others. ``freeze``: this process is adcheck's own command, whose
        objects may all be left out of later garbage collections before the
        forks (``runner.frozen``); a program's own process is not frozen."""
        import importlib
        import sys
        for name in PRELOAD + TORCH_PRELOAD:
            try:
                importlib.import_module(name)
            except ImportError:
                pass
        # (tried after the imports: a fork's first backward would import them too)
        if probe and "torch" in sys.modules and not torch_backward_forks():
            yield
            return
        if freeze:   # (after the imports: what the workers inherit; see runner.frozen)
            gc.freeze()
        self.shutdown()
        for stream in (sys.stdout, sys.stderr):   # no buffered text printed twice
            stream.flush()
        previous, self.context = self.context, multiprocessing.get_context("fork")
        try:
            # ``count`` workers forked now, before the caller starts threads (a
            # progress bar's) whose locks a fork would copy held
            with held_signals():
                self.prestart(count)
            yield
        finally:
            self.shutdown()
            self.context = previous

    def remove(self, worker: Worker) -> None:
        if worker in self.workers:
            self.workers.remove(worker)

    def shutdown(self) -> None:
        """Stop every worker (they hold nothing worth waiting for)."""
        with held_signals():
            for worker in self.workers:
                worker.kill()
            self.workers = []


#: this process's torch can no longer backpropagate in a fork (found once: for good)
_TORCH_FORK_BROKEN: list = []


def torch_backward_forks() -> bool:
    """Whether a fork of this process can run torch's backward. Not after a
    backward here started the autograd engine's own threads (a reentrant
    backward nested deeper than its limit does): torch then refuses every
    backward in a fork ("Unable to handle autograd's threading in combination
    with fork-based multiprocessing"), and a worker forked here would report
    each check as an error. A command-line process never gets there (it runs
    no backward before forking); a program or a test that calls the command
    line in its own process may. Tried in a fork, waited for at most 10 s (the
    fork's backward is the first of its process, whose set-up a worker then pays
    again: about a tenth of a second)."""
    import os
    if _TORCH_FORK_BROKEN:
        return False
    pid = os.fork()
    if pid == 0:   # (the child: a one-node backward, then out, whatever happens)
        status = 1
        try:
            import torch
            x = torch.zeros(1, requires_grad=True)
            torch.autograd.grad(x * 2.0, x, torch.ones(1))
            status = 0
        finally:
            os._exit(status)
    deadline = time.monotonic() + 10.0
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            status = 1
            break
        time.sleep(0.001)
    if status != 0:
        _TORCH_FORK_BROKEN.append(True)
    return status == 0


_SHARED: list = []


def shared_pool() -> WorkerPool:
    """This process's pool, started on first use and stopped when it exits."""
    if not _SHARED:
        _SHARED.append(WorkerPool())
        # multiprocessing's exit handler (registered when multiprocessing.connection
        # imported multiprocessing.util, above) would send our workers SIGTERM, which
        # they ignore, and wait for them forever; ours, registered later, runs first
        atexit.register(_SHARED[0].shutdown)
    return _SHARED[0]
