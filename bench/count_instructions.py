"""Instructions our side of ``bench/vs_torch.py`` executes per round of its 49 ops.

    python bench/count_instructions.py fast            # one mode, one round
    python bench/count_instructions.py slow,gradgrad --rounds 2
    python bench/count_instructions.py fast --ops exp,add

Counted by valgrind's callgrind, which no load on the machine changes (CPU
and wall time do): ``--collect-atstart=no --toggle-collect=functools_reduce``
counts only what runs inside ``functools.reduce``, and the timed rounds are
the only code run there, so the imports, the warm-up round and the set-up are
left out (two counts of one tree agree to about 0.2 %). ``PYTHONHASHSEED=0``,
each check seeded with its op's position, torch imported as ``vs_torch.py``
imports it. About 50 times slower than a plain run: a round of fast mode
takes half a minute, of gradgrad several minutes. Compare two trees by
running this file of each (it measures the checkout it is in).
"""
from __future__ import annotations

import argparse
import functools
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

MODES = ("slow", "slow+fwd", "fast", "gradgrad")


def _rounds(mode: str, rounds: int, ops: str | None) -> None:
    """Inside the callgrind run: a warm round, then ``rounds`` inside reduce."""
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "bench"))
    import torch  # noqa: F401  (imported as in vs_torch.py: isinstance checks see it)

    from adcheck import gradcheck, refengine
    from vs_torch_ops import build_ops
    checks = {"slow": (gradcheck.gradcheck, {}),
              "slow+fwd": (gradcheck.gradcheck, {"check_forward_ad": True}),
              "fast": (gradcheck.gradcheck, {"fast_mode": True}),
              "gradgrad": (gradcheck.gradgradcheck, {})}
    check, keywords = checks[mode]
    chosen = build_ops(0)
    if ops:
        chosen = [op for op in chosen if op.name in ops.split(",")]

    def one_round(*_):
        for i, op in enumerate(chosen):
            check(op.func(refengine), op.inputs(refengine), seed=i, **keywords)
    one_round()   # warm: imports, caches
    functools.reduce(one_round, range(rounds + 1))   # (rounds calls: the counted part)


def count(mode: str, rounds: int, ops: str | None) -> int:
    """Instructions per round of ``mode``."""
    command = ["valgrind", "--tool=callgrind", "--collect-atstart=no",
               "--toggle-collect=functools_reduce", "--callgrind-out-file=/dev/null",
               sys.executable, __file__, mode, "--inside", mode, "--rounds", str(rounds)]
    if ops:
        command += ["--ops", ops]
    run = subprocess.run(command, capture_output=True, text=True,
                         env={**os.environ, "PYTHONHASHSEED": "0"})
    found = re.search(r"Collected : (\d+)", run.stderr)
    if run.returncode != 0 or found is None:
        raise SystemExit(f"callgrind failed ({run.returncode}):\n{run.stderr[-2000:]}")
    return int(found.group(1)) // rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modes", help="comma-separated, from " + ", ".join(MODES))
    parser.add_argument("--rounds", type=int, default=1, help="rounds counted (default 1)")
    parser.add_argument("--ops", default=None, help="comma-separated op names (default all)")
    parser.add_argument("--inside", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inside:
        return _rounds(args.inside, args.rounds, args.ops)
    for mode in args.modes.split(","):
        if mode not in MODES:
            raise SystemExit(f"unknown mode {mode!r}; the modes are {', '.join(MODES)}")
        print(f"{mode:10s} {count(mode, args.rounds, args.ops) / 1e6:8.1f} million "
              f"instructions per round", flush=True)


if __name__ == "__main__":
    main()
