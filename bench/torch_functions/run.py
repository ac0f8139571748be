"""Check every function of ``functions.py`` as a new user would, one command each:

    python bench/torch_functions/run.py            # all 72
    python bench/torch_functions/run.py cos sinc   # some

``adcheck check functions.py:NAME --engine torch -q``, run from this folder
with no other option; prints each command that does not exit 0, with its
output, and a count at the end. A benchmark of verdicts: it asserts nothing.
"""
from __future__ import annotations

import ast
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def names() -> list:
    tree = ast.parse((HERE / "functions.py").read_text())
    return [node.name for node in tree.body if isinstance(node, ast.FunctionDef)]


def main(argv: list) -> int:
    chosen = argv or names()
    start, failing = time.perf_counter(), []
    for name in chosen:
        done = subprocess.run(["adcheck", "check", f"functions.py:{name}", "--engine", "torch",
                               "-q"], cwd=HERE, capture_output=True, text=True)
        if done.returncode != 0:
            failing.append(name)
            print(f"=== {name}: exit status {done.returncode}")
            print((done.stdout + done.stderr).strip())
    print(f"{len(chosen) - len(failing)} of {len(chosen)} exit 0 "
          f"({time.perf_counter() - start:.0f} s); not: {', '.join(failing) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
