"""One run on the worker pool: hand out tasks, watch the workers, collect.

``run_pool(pool, tasks, jobs, collector)`` warms the pool for the tasks'
registry and runs them; ``RunLoop(pool, tasks, jobs, collector).loop()`` keeps at most ``jobs``
workers busy, one task each, and waits on their pipes and process sentinels
at once (``multiprocessing.connection.wait``), waking every ``POLL`` seconds
while a task runs to note the worker's memory and enforce its deadline.
Messages go to ``receive``; a worker's end to ``bury``, which turns the
death of a busy worker into its task's error and starts a replacement.
It returns ``(status, cause)``: "done", "stopped" (the collector asked to
stop: fail-fast), "interrupted" (Ctrl-C or a stop signal), or "broken"
(the workers cannot run tasks; ``cause`` says why).
"""
from __future__ import annotations

import os
import time
from collections import deque
from multiprocessing import connection

from adcheck.runner import deaths
from adcheck.runner.pool import POLL, START_LIMIT, Worker, held_signals

#: explored points of one task whose worker died there before the task ends in an
#: error: each is run again with those points recorded as crashes (``_resume``)
MAX_CRASHES = 4


def run_pool(pool, tasks: list, jobs: int, collector) -> tuple:
    """Run the tasks on at most ``jobs`` workers of ``pool``; ``(status,
    cause)``. The workers preload what the tasks' registry asks for (see
    ``WorkerPool.warm``)."""
    for registry in dict.fromkeys(t.settings.registry for t in tasks):
        pool.warm(registry.preload)
    return RunLoop(pool, tasks, jobs, collector).loop()


class RunLoop:
    """The parent's side of one run (see the module docstring)."""

    def __init__(self, pool, tasks: list, jobs: int, collector):
        self.pool, self.collector = pool, collector
        self.pending = deque(tasks)
        self.size = max(1, min(jobs, len(tasks)))
        self.status, self.cause = "done", None
        self.context = {"cwd": os.getcwd()}
        self.crashed: dict = {}     # task index: {explored point key: how its worker died}

    # the loop ---------------------------------------------------------------

    def loop(self) -> tuple:
        try:
            self._start_workers()
            while self.status == "done" and (self.pending or self._busy()):
                self._hand_out()
                if self.status == "done" and (self.pending or self._busy()):
                    self._wait()
        except KeyboardInterrupt:
            self.status = "interrupted"
        finally:
            if self.status != "done":
                with held_signals():
                    for worker in self._busy():
                        self.pool.remove(worker)
                        worker.kill()
        return self.status, self.cause

    def _busy(self) -> list:
        return [w for w in self.pool.workers if w.task is not None]

    def _hand_out(self) -> None:
        for worker in [w for w in self.pool.workers if w.task is None]:
            if worker.dead or worker.process.exitcode is not None:    # ended while idle
                with held_signals():
                    self.bury(worker)
        idle = [w for w in self.pool.workers if w.ready and w.task is None]
        while self.pending and idle and len(self._busy()) < self.size:
            self.dispatch(idle.pop(0), self.pending.popleft())
        if self.pending and not self.pool.workers:
            self.status = "broken"
            self.cause = self.cause or "the worker processes could not be started"

    def dispatch(self, worker: Worker, task) -> None:
        """Send ``task`` to an idle ``worker``."""
        worker.assign(task, self.pool._available)
        try:
            worker.conn.send((task, {**self.context, "crashed": self.crashed.get(task.index, {})}))
        except OSError:
            worker.dead = True     # its end is seen by the next wait

    def _wait(self) -> None:
        busy = self._busy()
        timeout = POLL if busy else 1.0
        kill_times = [w.kill_at for w in busy if w.kill_at is not None]
        if kill_times:
            timeout = max(0.0, min(timeout, min(kill_times) - time.monotonic()))
        workers = list(self.pool.workers)
        waitables = [w.conn for w in workers] + [w.process.sentinel for w in workers]
        ready = connection.wait(waitables, timeout)
        for worker in workers:
            if worker.conn in ready:
                self._drain(worker)
            if worker.dead or worker.process.sentinel in ready:
                with held_signals():
                    self.bury(worker)
            elif worker.task is not None:
                worker.watch()
        self._enforce_deadlines()

    def _drain(self, worker: Worker) -> None:
        """Every message the worker has sent (all of them before its end)."""
        try:
            while not worker.dead and worker.conn.poll():
                self.receive(worker, worker.conn.recv())
        except (EOFError, OSError):
            worker.dead = True

    # messages ---------------------------------------------------------------

    def receive(self, worker: Worker, message: tuple) -> None:
        """One message of ``worker`` (see ``runner.worker``)."""
        kind = message[0]
        if kind == "ready":
            worker.ready = True
        elif kind == "failed":
            worker.failure = message[1]
        elif kind == "sample":
            worker.last_sample, worker.samples = message[1].sample, worker.samples + 1
            self.collector.sample(message[1])
        elif kind == "done":
            worker.task = None
            if not self.collector.done(message[1], message[2]):
                self.status = "stopped"
        elif kind == "broken":
            self.pending.appendleft(worker.task)
            worker.task = None
            self.status, self.cause = "broken", message[1]

    # deaths and deadlines ---------------------------------------------------

    def bury(self, worker: Worker) -> None:
        """A worker ended: its task's error, or why workers cannot start."""
        if worker not in self.pool.workers:
            return
        self._drain(worker)
        self.pool.remove(worker)
        code = worker.reap()
        task = worker.task
        if task is not None:
            worker.evidence.oom_kills_after = deaths.oom_kills()
            cause = deaths.describe_exit(code, worker.evidence)
            if not self._resume(worker, f"the worker process {cause}"):
                self._task_error(worker, f"the worker process checking it {cause}")
        elif not worker.ready:
            why = worker.failure or (f"a worker process ended while starting, with "
                                     f"{deaths.status_text(code)} (what it printed, if "
                                     "anything, is above on stderr)")
            self.cause = f"the worker processes cannot start: {why}"
            return
        if self.pending and self.status == "done":
            self._start_workers()

    def _resume(self, worker: Worker, cause: str) -> bool:
        """Queue again the task of a worker that died at an explored point, with
        that point recorded as a crash (``gradcheck.explore.watch``): the run of
        the task again finds what it had found, records the point and explores
        on. False (the task's error instead) where it died elsewhere, after
        sending a sample, or at its ``MAX_CRASHES``-th point."""
        task, key = worker.task, worker.point
        crashed = self.crashed.setdefault(task.index, {})
        if key is None or worker.samples or len(crashed) >= MAX_CRASHES:
            return False
        crashed[key] = cause
        worker.task = None
        self.pending.appendleft(task)
        return True

    def _start_workers(self) -> None:
        """Start workers until ``size`` are alive; a failure to start any is the
        run's end, said once."""
        try:
            with held_signals():
                self.pool.prestart(self.size)
        except Exception as exc:  # noqa: BLE001 - multiprocessing's own failures
            self.status = "broken"
            self.cause = (f"the worker processes cannot start: {type(exc).__name__}: "
                          f"{' '.join(str(exc).split())}")

    def _enforce_deadlines(self) -> None:
        now = time.monotonic()
        for worker in [w for w in self.pool.workers if not w.ready]:
            if now - worker.born > START_LIMIT:
                worker.failure = f"a worker process did not start within {START_LIMIT:g}s"
                with held_signals():
                    worker.kill()
                    self.bury(worker)
        for worker in self._busy():
            if worker.kill_at is not None and now >= worker.kill_at and worker.task:
                timeout = worker.task.settings.timeout
                with held_signals():
                    self.pool.remove(worker)
                    worker.kill()
                    hung = (f"the worker process did not return from it within --timeout "
                            f"({timeout:g}s) and was killed")
                    if not self._resume(worker, hung):
                        self._task_error(worker, (
                            f"timed out after {timeout:g}s (--timeout) and did not stop within "
                            f"{worker.kill_at - worker.since - timeout:g}s more (a call into C "
                            "code that does not return, or code that catches the timeout), so "
                            "its worker process was killed"))
                if self.pending and self.status == "done":
                    self._start_workers()

    def _task_error(self, worker: Worker, what: str) -> None:
        """End the worker's task with a task-level error saying ``what`` happened."""
        from adcheck.runner.tasks import OpTask, SampleOutcome, task_error
        task = worker.task
        worker.task = None
        where = ""
        if isinstance(task, OpTask):
            current = task.sample if task.sample is not None else \
                0 if worker.last_sample is None else worker.last_sample + 1
            where = f", at sample {current} ({worker.samples} checked before it)"
        earlier = [r for s in self.collector.samples.get(task.index, []) for r in s.results]
        started = time.perf_counter() - (time.monotonic() - worker.since)
        result = task_error(task, f"{what}{where}; the other results are kept", started,
                            earlier[0].family if earlier else "")
        self.collector.sample(SampleOutcome(task.index, task.dtype, None, [result], [None]))
        if not self.collector.done(task.index, []):
            self.status = "stopped"
