"""Issue 28, item 3: a wrong formula ends as a failure, not a timeout, at every
size where the correct one passes.

Runs ``adcheck check`` (default plan, default --timeout 300) on the row-wise
layer norm of examples/layernorm.py, right and with a wrong
reduction, at 100x100, 300x100 and 1000x100, and prints per run the exit
status (0 right, 1 wrong is what must hold), the plan each check took and the
wall time. Usage: ``python bench/layernorm_plans.py [ROWS ...]``.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

FIXTURE = Path(__file__).resolve().parent.parent / "examples" / "layernorm.py"
EXPECTED = {"RowLayerNorm": 0, "RowLayerNormBuggy": 1}


def run(name: str, rows: int) -> dict:
    """One ``adcheck check`` of ``name`` at ``rows`` x 100: status, plans, seconds."""
    start = time.perf_counter()
    done = subprocess.run(["adcheck", "check", f"{FIXTURE}:{name}", "--inputs",
                           f"randn({rows}, 100)", "--format", "json"],
                          capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    doc = json.loads(done.stdout) if done.stdout.strip() else {"results": []}
    plans = {r["check"]: (r["status"], r["plan"]) for r in doc["results"]}
    return {"name": name, "rows": rows, "exit": done.returncode, "plans": plans,
            "seconds": round(seconds, 1), "as_expected": done.returncode == EXPECTED[name]}


def main(sizes: list) -> int:
    rows = [run(name, n) for n in sizes for name in EXPECTED]
    for row in rows:
        print(json.dumps(row))
    return 0 if all(row["as_expected"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main([int(a) for a in sys.argv[1:]] or [100, 300, 1000]))
