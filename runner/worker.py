"""The worker process: runs the tasks the parent sends, one at a time.

``main(conn)`` is the whole life of a worker (``runner.pool`` starts it with
``spawn``). It makes itself quiet and safe first: SIGINT, SIGHUP and SIGTERM
are ignored (the parent decides when a worker ends, and kills it with
SIGKILL, so no traceback is ever printed), it dies with its parent (Linux's
``PR_SET_PDEATHSIG``), and its standard output goes to standard error, so
what the code under check prints can never mix into a report on stdout. It
then imports the libraries once (a warm worker), says ``("ready",)``, and
serves tasks until told to stop or until the parent is gone.

Messages to the parent: ``("ready",)``; ``("failed", text)`` when it cannot
start; per task ``("sample", SampleOutcome)`` as each sample is done, then
``("done", index, warnings)``; or ``("broken", text)`` when a task cannot
run in a worker at all (a plugin that loads in the parent but not here).
While a check explores, it writes the key of each explored point on the
``board`` it shares with the parent before trying the point, and clears it
after (``gradcheck.explore.watch``): no message, the parent reads the board
only when the worker dies.
"""
from __future__ import annotations

import os
import signal
import sys
import traceback


def _quiet() -> None:
    for number in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(number, signal.SIG_IGN)
    held = {signal.SIGINT, signal.SIGHUP, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_UNBLOCK, held)   # the parent held them while starting us
    os.dup2(2, 1)
    # stream objects of its own: a fork of a process whose other thread (a progress
    # bar) was writing would otherwise inherit their locks held
    sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115 - for the process's life
    sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
    _die_with_parent()
    import faulthandler
    faulthandler.disable()   # a fork of a process that enabled it: a crash is the run's to report


def _die_with_parent() -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL))      # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return


def _send(conn, message) -> None:
    """Send, or end quietly when the parent is gone."""
    try:
        conn.send(message)
    except (BrokenPipeError, ConnectionResetError, EOFError):
        os._exit(0)


def _send_sample(conn, outcome) -> None:
    try:
        conn.send(("sample", outcome))
    except (BrokenPipeError, ConnectionResetError, EOFError):
        os._exit(0)
    except Exception:  # noqa: BLE001 - a report that does not pickle: send the results
        outcome.reports = [None] * len(outcome.results)
        _send(conn, ("sample", outcome))


def _one_thread() -> None:
    """Make torch compute on one thread in this worker, unless the user chose a
    count (``OMP_NUM_THREADS``).

    The run's parallelism is its workers, one per core asked for; torch's
    default of one thread per core in each of them oversubscribes the cores,
    and its OpenMP threads then spin waiting for each other: on 2 cores, two
    workers each checking instance_norm took 40 s where one thread each takes
    0.5 s (the batch norms, convolutions and 3-d poolings of op_db were the
    slowest ops of a sweep for this reason alone). The samples checked are
    small, so one thread loses nothing worth having."""
    if os.environ.get("OMP_NUM_THREADS"):
        return
    torch = sys.modules.get("torch")
    if torch is None:   # imported later, it reads the variable
        os.environ["OMP_NUM_THREADS"] = "1"
    elif torch.get_num_threads() != 1:
        torch.set_num_threads(1)


def _prepare(task, context: dict) -> str | None:
    """Take the parent's working folder, load the plugins;
    why the task cannot run here, or ``None``."""
    from adcheck.runner.errors import PluginError
    _one_thread()
    try:
        os.chdir(context["cwd"])
    except OSError as exc:
        return f"a worker process cannot enter the folder {context['cwd']!r}: {exc.strerror}"
    try:
        task.settings.registry.load_plugins(task.settings.plugins)
    except PluginError as exc:
        why = str(exc)
    except BaseException as exc:  # noqa: BLE001 - sys.exit and the like, while importing it
        why = f"loading it raised {type(exc).__name__}: {exc}"
    else:
        return None
    return (f"a worker process cannot load a plugin that loads in the adcheck process ({why}); "
            "a plugin must import the same way in a fresh Python process: make it "
            "independent of the state of the process that runs adcheck")


def _keep_jax_compilations() -> None:
    """Keep what JAX compiles on disk between runs, once JAX is imported (asked
    before each task: one may import it); see ``keep_compilations``."""
    if "jax" in sys.modules:
        from adcheck.gradcheck.engines.jaxcompiled import keep_compilations
        keep_compilations()


def _serve(conn, board) -> None:
    from adcheck.gradcheck.explore.watch import watching
    from adcheck.runner.tasks import execute

    def at(key: str) -> None:
        board.value = key.encode()

    def left() -> None:
        board.value = b""
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        task, context = message
        problem = _prepare(task, context)
        if problem is not None:
            _send(conn, ("broken", problem))
            continue
        _keep_jax_compilations()
        # each explored point is on the board while it runs, so that a death there
        # names it (``runner.runloop``), and the points it died at before are not run again
        with watching(at, left, context.get("crashed")):
            warnings = execute(task, lambda outcome: _send_sample(conn, outcome))
        _send(conn, ("done", task.index, warnings))


def main(conn, board) -> None:
    """A worker's life: start quietly, import once, serve tasks; ``board``: shared
    bytes where it writes the explored point it is at (``runner.pool.Worker``)."""
    _quiet()
    try:
        from adcheck import gradcheck  # noqa: F401 - imported once here, so that every task finds it warm
        from adcheck import opinfo  # noqa: F401
        import adcheck.runner.tasks  # noqa: F401
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which says why
        detail = traceback.format_exception_only(type(exc), exc)[-1].strip()
        _send(conn, ("failed", f"importing adcheck's libraries raised {detail}"))
        return
    _send(conn, ("ready",))
    _serve(conn, board)
