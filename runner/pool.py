"""Run tasks in this process or in N worker processes, with a per-task deadline.

``run_tasks(tasks, work, jobs, on_done)`` calls ``work(task)`` for every task
and hands each outcome to ``on_done`` as it arrives; the caller sorts them,
so ``--jobs 1`` and ``--jobs N`` give the same report. Workers are started
with ``spawn`` (safe with torch's thread pools, which ``fork`` is not) and
ignore SIGINT: Ctrl-C reaches this process only, which terminates the
workers and returns ``"interrupted"`` with what has arrived so far.

``deadline(seconds)`` bounds one task: it raises ``TaskTimeout`` from
SIGALRM inside the task (the worker catches it and reports the op as an
error). A long call inside C code is interrupted when it returns to Python.
As a last resort, if no worker reports for ``stall_seconds`` (a worker died,
or hangs in C), the pool is terminated and ``"stalled"`` returned.
"""
from __future__ import annotations

import multiprocessing
import signal
import threading
from collections.abc import Callable, Iterable
from contextlib import contextmanager


class TaskTimeout(BaseException):
    """A task ran past its deadline. A ``BaseException``, so that code under
    test catching ``Exception`` cannot swallow it."""

    def __init__(self, seconds: float):
        super().__init__(f"timed out after {seconds:g}s")
        self.seconds = seconds


def _can_alarm() -> bool:
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextmanager
def deadline(seconds: float | None):
    """Raise ``TaskTimeout`` in the block after ``seconds`` (no limit if None/0)."""
    if not seconds or not _can_alarm():
        yield
        return

    def expire(signum, frame):
        raise TaskTimeout(seconds)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _worker_init(initializer: Callable | None, initargs: tuple) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if initializer is not None:
        initializer(*initargs)


def _run_serial(tasks: list, work: Callable, on_done: Callable) -> str:
    try:
        for task in tasks:
            if on_done(work(task)) is False:
                return "stopped"
    except KeyboardInterrupt:
        return "interrupted"
    return "done"


def _hold_sigint():
    """Block SIGINT (it stays pending); returns what to give ``_release_sigint``."""
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        return None
    return signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


def _release_sigint(previous) -> None:
    if previous is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _run_pool(tasks: list, work: Callable, jobs: int, on_done: Callable, initializer,
              initargs: tuple, stall_seconds: float | None) -> str:
    context = multiprocessing.get_context("spawn")
    # A Ctrl-C while the workers start or stop would escape the handler below
    # and leave the pool's threads hanging the exit: hold it until the loop.
    held = _hold_sigint()
    pool = context.Pool(jobs, initializer=_worker_init, initargs=(initializer, initargs))
    status = "done"
    try:
        _release_sigint(held)   # a Ctrl-C held during start-up is raised here
        outcomes = pool.imap_unordered(work, tasks, chunksize=1)
        for _ in range(len(tasks)):
            try:
                outcome = outcomes.next(timeout=stall_seconds)
            except multiprocessing.TimeoutError:
                status = "stalled"
                break
            if on_done(outcome) is False:
                status = "stopped"
                break
    except KeyboardInterrupt:
        status = "interrupted"
    finally:
        held = _hold_sigint()
        try:
            if status == "done":
                pool.close()
            else:
                pool.terminate()
            pool.join()
        finally:
            _release_sigint(held)
    return status


def run_tasks(tasks: Iterable, work: Callable, jobs: int, on_done: Callable, *,
              initializer: Callable | None = None, initargs: tuple = (),
              stall_seconds: float | None = None) -> str:
    """Run ``work`` on every task; returns "done", "stopped" (``on_done``
    returned False), "interrupted" (Ctrl-C) or "stalled" (no worker reported
    for ``stall_seconds``). ``work``, ``initializer`` and the tasks must be
    picklable when ``jobs > 1``; the initializer runs once per worker."""
    tasks = list(tasks)
    if jobs <= 1 or len(tasks) <= 1:
        return _run_serial(tasks, work, on_done)
    return _run_pool(tasks, work, min(jobs, len(tasks)), on_done, initializer, initargs,
                     stall_seconds)
