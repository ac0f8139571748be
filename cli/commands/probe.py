"""One call of the user's object before the run, in a process of its own.

``adcheck check`` calls the object once on each candidate input set before
the run: to keep the default sets it runs on, and to record the tensors'
shapes (``runner.layouts``). The code under check may exit, crash or hang
(``tests/cli/test_faults.py``), so the call runs in a forked child, bounded
in time (SIGALRM inside it, a kill from here a moment later), its output
sent to the null device; this process only reads the child's answer. Where
there is no ``fork`` the call runs here, bounded in time alike.
"""
from __future__ import annotations

import os
import pickle
import select
import signal
import sys
from typing import NamedTuple

from adcheck.cli.errors import InputError

#: seconds past the child's own time limit before it is killed from here
GRACE = 2.0


class Probed(NamedTuple):
    """What one call did: ``kind`` "ran" (``layout`` set), "raised", "timeout"
    or "died"; ``text`` says what happened for all but "ran"."""

    kind: str
    layout: dict | None = None
    text: str = ""
    #: whether every output entry was finite (where it "ran")
    finite: bool = True
    #: where it "raised" because it is another engine's code: that engine
    #: (``gradcheck.engines.foreign_engine``)
    foreign: str | None = None


def _call(target, spec: str, seed: int, index: int, seconds: float) -> Probed:
    from adcheck.runner.checks import fault_text
    from adcheck.runner.layouts import all_finite, layout_and_outputs
    from adcheck.runner.deadline import TaskTimeout, deadline
    from adcheck.runner.subjects import subject_of
    try:
        with deadline(seconds):
            call, _ = subject_of(target, spec, seed, index).call()
            layout, outs = layout_and_outputs(call)
            return Probed("ran", layout, finite=all_finite(outs))
    except TaskTimeout as exc:
        return Probed("timeout", None, str(exc))
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the user's code: any fault
        from adcheck.gradcheck.engines import foreign_engine
        return Probed("raised", None, fault_text(exc), foreign=foreign_engine(exc, target.engine))


def _child(write_end: int, job) -> None:
    """The forked child: run ``job``, write its pickled ``Probed``, exit at once."""
    try:
        import faulthandler
        faulthandler.disable()      # a crash of the code under check is the run's to report
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        # (a thread pool the parent started is not forked with it: a child entering
        # it waits forever, as in a process that ran torch on several threads before)
        torch = sys.modules.get("torch")
        if torch is not None:
            torch.set_num_threads(1)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        data = pickle.dumps(job())
        with os.fdopen(write_end, "wb") as out:
            out.write(data)
    finally:
        os._exit(0)


def _read(read_end: int, seconds: float) -> bytes | None:
    """Everything the child writes before EOF, or ``None`` after ``seconds``."""
    chunks = []
    with os.fdopen(read_end, "rb") as pipe:
        while True:
            ready, _, _ = select.select([pipe], [], [], seconds)
            if not ready:
                return None
            chunk = os.read(pipe.fileno(), 1 << 16)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)


def probe(target, spec: str, seed: int, index: int, seconds: float) -> Probed:
    """Call ``target`` on input set ``spec`` once, in a child process. A plain
    function that raised because it is another engine's code (torch.zeros_like
    given a refengine tensor) is a usage error naming the --engine to give:
    no input set would make it run, and each check would fail with the same."""
    found = _probe(target, spec, seed, index, seconds)
    if found.foreign is not None and target.kind == "function":
        kind, _, words = found.text.partition(": ")
        raise InputError(f"{target.spec} looks like {found.foreign} code: it raised {kind} "
                         f"({words}) on {target.engine} tensors, and plain functions are "
                         f"checked on --engine {target.engine} unless told; add --engine "
                         f"{found.foreign}")
    return found


def _probe(target, spec: str, seed: int, index: int, seconds: float) -> Probed:
    import importlib
    if target.engine in ("torch", "jax"):   # imported here, once, not in each child
        importlib.import_module(target.engine)
    if not hasattr(os, "fork"):
        return _call(target, spec, seed, index, seconds)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        _child(write_end, lambda: _call(target, spec, seed, index, seconds))
    os.close(write_end)
    data = _read(read_end, seconds + GRACE)
    if data is None:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if data is None:
        return Probed("timeout", None, f"timed out after {seconds:g}s")
    if not data:
        how = (f"killed by signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else
               f"exited with status {os.WEXITSTATUS(status)}")
        return Probed("died", None, f"its process {how}")
    return pickle.loads(data)
