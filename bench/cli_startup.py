"""The command line's fixed costs, against ``import torch``: what a pre-commit hook pays.

    python bench/cli_startup.py                 # 5 interleaved rounds
    python bench/cli_startup.py --rounds 3 --no-sweep
    python bench/cli_startup.py --against /tmp/before   # the same commands of another checkout

Each round runs, one after the other (interleaved, so a change of load hits
all alike):

- ``python -c "import torch"``: the anchor;
- ``adcheck check mylayer.py:make_layer --inputs 'randn(2, 4)' --check reverse -q``
  from ``examples/``: a command-line check of a small torch Function (it
  fails: the example's planted bug; exit status 1 expected);
- ``adcheck --help``;
- the same check in this process, first and second time (``gradcheck.check``
  on the torch Function; the first pays the imports gradcheck makes lazily);
- with the sweep, ``adcheck ops -q`` over the built-in registry (its exit
  status is not judged here);
- with ``--jax``, ``python -c "import jax"`` and ``adcheck check
  jax_ops.py:my_tanh -q`` from ``examples/`` (a ``custom_vjp``, two input
  sets, the default checks), with JAX's compilation cache off (what a first
  run compiles) and kept in a folder of this benchmark's (what a next run of
  the same check finds: the best of the rounds is a warm one).

For each, wall time and CPU time (user + system of every process the command
started: this process adopts the fork server and the workers when they
outlive the command, and waits for them; where it cannot, of the command and
the children it waited for only, a floor).
The table gives the best of the rounds and each command's ratio to ``import
torch`` in both clocks. On a machine others load, wall times swell with
their turns on the cores; CPU times do not. The load average is printed
before and after.
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"

COMMANDS = {
    "import torch": ([sys.executable, "-c", "import torch"], ROOT, 0),
    "adcheck check (torch Function)": (
        ["adcheck", "check", "mylayer.py:make_layer", "--inputs", "randn(2, 4)", "--check",
         "reverse", "-q"], EXAMPLES, 1),
    "adcheck --help": (["adcheck", "--help"], ROOT, 0),
}
JAX = {
    "import jax": ([sys.executable, "-c", "import jax"], ROOT, 0),
    "adcheck check (JAX custom_vjp, nothing cached)": (
        ["env", "JAX_ENABLE_COMPILATION_CACHE=false", "adcheck", "check", "jax_ops.py:my_tanh",
         "-q"], EXAMPLES, 0),
    "adcheck check (JAX custom_vjp, compilations kept)": (
        ["env", "XDG_CACHE_HOME=/tmp/adcheck_bench_cache", "adcheck", "check",
         "jax_ops.py:my_tanh", "-q"], EXAMPLES, 0),
}
SWEEP = ("adcheck ops -q (built-in registry)", (["adcheck", "ops", "-q"], ROOT, None))
#: the adcheck command of another checkout (``--against``), run as the console script runs it
OTHER_ADCHECK = "import sys; from adcheck.cli.main import main; sys.argv[0] = 'adcheck'; main()"


def against(checkout: str, commands: dict) -> dict:
    """``commands``' adcheck commands once more, run from ``checkout`` (a git
    worktree of an earlier commit, say), named with an ``(other)`` suffix."""
    other = {}
    for name, (command, cwd, expected) in commands.items():
        if "adcheck" in command:
            i = command.index("adcheck")
            variables = command[1:i] if command[0] == "env" else []
            argv = ["env", f"PYTHONPATH={checkout}", *variables, sys.executable, "-c",
                    OTHER_ADCHECK, *command[i + 1:]]
            other[f"{name} (other)"] = (argv, cwd, expected)
    return other


IN_PROCESS = """
import sys, time
sys.path.insert(0, {examples!r})
t0 = time.perf_counter(); c0 = time.process_time()
import torch
from adcheck.gradcheck import check
import mylayer
layer = mylayer.make_layer().double()
x = torch.randn(2, 4, dtype=torch.float64, requires_grad=True)
times = []
for _ in range(2):
    t = time.perf_counter(); c = time.process_time()
    check(layer, (x,), seed=0, precise=True)
    times.append((time.perf_counter() - t, time.process_time() - c))
print(times[0][0], times[0][1], times[1][0], times[1][1],
      time.perf_counter() - t0, time.process_time() - c0)
"""


def load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def adopt_orphans() -> bool:
    """Make this process the reaper of its descendants' orphans (Linux), so that
    a command's fork server and workers, which outlive it by a moment, are
    waited for here and their CPU time counted; False where it cannot."""
    try:
        import ctypes
        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def reap_orphans(seconds: float = 10.0) -> None:
    """Wait for every adopted process to end (at most ``seconds``)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.02)


def timed(argv: list, cwd: Path) -> tuple:
    """``(wall s, cpu s, exit status, last line of output)`` of one run; the CPU
    time of every process it started when ``adopt_orphans`` took effect."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    reap_orphans()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    tail = (done.stdout.strip().splitlines() or done.stderr.strip().splitlines() or [""])[-1]
    return wall, cpu, done.returncode, tail


def in_process() -> dict:
    """The same check in one process: first and second call, and the whole script."""
    code = IN_PROCESS.format(examples=str(EXAMPLES))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"the in-process check failed:\n{done.stderr}")
    out = done.stdout.split()
    first_w, first_c, second_w, second_c, whole_w, whole_c = map(float, out)
    return {"in process, first check": (first_w, first_c),
            "in process, second check": (second_w, second_c),
            "in process, import torch + 2 checks": (whole_w, whole_c)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    parser.add_argument("--no-sweep", action="store_true",
                        help="leave out adcheck ops over the built-in registry")
    parser.add_argument("--jax", action="store_true",
                        help="also import jax and check a JAX custom_vjp (see above)")
    parser.add_argument("--against", metavar="CHECKOUT",
                        help="also run the adcheck commands from this checkout, interleaved "
                             "(e.g. git worktree add /tmp/before <commit>)")
    args = parser.parse_args(argv)
    commands = dict(COMMANDS)
    if not args.no_sweep:
        commands[SWEEP[0]] = SWEEP[1]
    if args.jax:
        commands.update(JAX)
    if args.against:
        commands.update(against(args.against, commands))
    whole = adopt_orphans()
    print(f"load average before: {load()} ({os.cpu_count()} cpus); CPU times "
          + ("of every process a command started (fork server and workers included)" if whole
             else "of each command and the children it waited for only"))
    best: dict = {}
    for _ in range(args.rounds):
        for name, (command, cwd, expected) in commands.items():
            wall, cpu, status, tail = timed(command, cwd)
            if expected is not None and status != expected:
                print(f"  {name}: exit status {status}, expected {expected}: {tail}")
            w, c = best.get(name, (float("inf"), float("inf")))
            best[name] = (min(w, wall), min(c, cpu))
        for name, (wall, cpu) in in_process().items():
            w, c = best.get(name, (float("inf"), float("inf")))
            best[name] = (min(w, wall), min(c, cpu))
    print(f"load average after: {load()}")
    anchor_w, anchor_c = best["import torch"]
    print(f"\nbest of {args.rounds} rounds{'':27} {'wall s':>8} {'x torch':>8} {'cpu s':>8} "
          f"{'x torch':>8}")
    for name, (wall, cpu) in best.items():
        print(f"{name:46} {wall:8.3f} {wall / anchor_w:8.2f} {cpu:8.3f} {cpu / anchor_c:8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
