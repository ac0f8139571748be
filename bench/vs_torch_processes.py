"""The machine and whole processes, for ``bench/vs_torch.py``: ``import torch``,
``adcheck --help`` and ``adcheck ops`` timed in subprocesses, and the load
average."""
from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


def _wall(cmd: list[str], timeout: float | None = None) -> tuple[float, int, str, str]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=timeout,
                          cwd=str(ROOT))
    return time.perf_counter() - start, proc.returncode, proc.stdout, proc.stderr


def adcheck_command() -> tuple[list[str], str]:
    """The adcheck console script of this interpreter (not a pyenv shim), and
    what it is; PYTHONPATH puts this checkout first whichever script runs."""
    beside = Path(sys.executable).parent / "adcheck"
    if beside.exists():
        return [str(beside)], str(beside)
    found = shutil.which("adcheck")
    if found:
        return [found], found
    return [sys.executable, "-c", "import sys; from adcheck.cli.main import main; sys.exit(main())"], \
        f"{sys.executable} -c 'from adcheck.cli.main import main'"


def time_import_torch(n: int = 3) -> dict:
    times = [_wall([sys.executable, "-c", "import torch"])[0] for _ in range(n)]
    return dict(first_s=times[0], best_s=min(times), median_s=statistics.median(times),
                runs=n)


def time_help(n: int = 5) -> dict:
    cmd, what = adcheck_command()
    runs = [_wall(cmd + ["--help"]) for _ in range(n)]
    out = dict(command=f"{what} --help", best_s=min(r[0] for r in runs),
               median_s=statistics.median(r[0] for r in runs), exit_status=runs[0][1], runs=n)
    shim = shutil.which("adcheck")
    if shim and Path(shim).resolve() != Path(cmd[0]).resolve():
        out["on_path"] = shim
        out["on_path_best_s"] = min(_wall([shim, "--help"])[0] for _ in range(n))
    return out


def time_sweep(extra: list[str], timeout: float) -> dict:
    cmd, what = adcheck_command()
    full = cmd + ["ops", "-q"] + extra
    shown = " ".join([what, "ops", "-q"] + extra)
    print(f"sweep: {shown} (this takes a while) ...", file=sys.stderr, flush=True)
    try:
        seconds, status, stdout, stderr = _wall(full, timeout=timeout)
    except subprocess.TimeoutExpired:
        return dict(command=shown, seconds=None, exit_status=None,
                    note=f"timed out after {timeout:.0f} s")
    lines = [ln for ln in stdout.splitlines() if ln.strip()]
    summary = next((ln for ln in reversed(lines) if " passed, " in ln), lines[-1] if lines else "")
    failures = [ln for ln in lines if ln.startswith(("FAIL", "ERROR"))]
    return dict(command=shown, seconds=seconds, exit_status=status, summary=summary,
                failures=failures, stderr_tail=stderr.strip().splitlines()[-5:],
                cpus=os.cpu_count())


def load_average() -> list | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        return None


def warn_if_busy(load, when: str):
    cpus = os.cpu_count() or 1
    if load and load[0] > 0.75 * cpus:
        print(f"note: the machine is busy {when} (load average {load[0]:.1f} over 1 min on "
              f"{cpus} cpus): ours and torch's runs are interleaved, so the ratios stay "
              "comparable, but the absolute times are inflated")
