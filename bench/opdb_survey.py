"""Survey PyTorch's op_db with torch's gradcheck and adcheck's, side by side.

For every op_db entry with autograd on CPU and every requested dtype it
supports, the first ``--samples`` samples are checked by three tools:
torch's gradcheck (with the op's flags, as PyTorch's gradient test calls
it), adcheck's ``gradcheck.gradcheck`` with the same flags, and adcheck's
``gradcheck.check(..., precise=True)``. Each tool runs under a per-sample
timer in a worker process forked after op_db is imported; a worker that
dies or hangs is replaced and the tool it was running is recorded as a
crash. Results stream to ``OUT/results.jsonl`` (``--resume`` skips the
(op, dtype) pairs already there); ``OUT/summary.json`` and
``OUT/summary.md`` classify them (see ``bench/opdb_survey_report.py``).

    nice python bench/opdb_survey.py --out survey            # float64, complex128
    python bench/opdb_survey.py --ops 'linalg.*' --all-dtypes --checks reverse,forward
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import multiprocessing as mp
import os
import sys
import time
from multiprocessing.connection import wait
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
BENCH = Path(__file__).resolve().parent
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import opdb_survey_worker as worker  # noqa: E402


def _worker_loop(conn, threads: int, memory_gb: float | None) -> None:
    worker.setup(threads, memory_gb)
    while True:
        task = conn.recv()
        if task is None:
            return
        worker.run_task(task, lambda kind, payload: conn.send((kind, payload)))
        conn.send(("done", task["id"]))


class Worker:
    """A forked worker process, the task it runs, and the tool it last started."""

    def __init__(self, ctx, threads: int, memory_gb: float | None):
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker_loop, args=(child, threads, memory_gb),
                                   daemon=True)
        self.process.start()
        child.close()
        self.task = None
        self.started = None
        self.deadline = None

    def give(self, task: dict, limit: float) -> None:
        self.task, self.started, self.deadline = task, None, time.monotonic() + limit
        self.conn.send(task)

    def stop(self) -> None:
        """End this worker (it is ours: killed by its own pid)."""
        if self.process.is_alive():
            self.process.kill()
        self.process.join(5)


def plan(entries: list, dtypes: list | None, patterns: list, skip: set, args) -> list:
    """One task per (op, dtype), in op_db order."""
    tasks = []
    for entry in entries:
        if patterns and not any(fnmatch.fnmatchcase(entry.name, p) for p in patterns):
            continue
        for dtype in entry.dtypes:
            name = str(dtype).rsplit(".", 1)[-1]
            if (dtypes is None or name in dtypes) and (entry.name, name) not in skip:
                tasks.append({"id": len(tasks), "op": entry.name, "dtype": name,
                              "samples": args.samples, "checks": args.checks,
                              "timeout": args.timeout, "tools": args.tools})
    return tasks


def _crash_record(started: dict, why: str, tools) -> dict:
    record = {k: v for k, v in started.items() if k != "tool"}
    for tool in tools:
        if tool not in record:
            record[tool] = {"status": "crash", "error": "WorkerDied", "message": why}
            if tool != started["tool"]:
                record[tool] = {"status": "not-run", "message": f"after a crash of {started['tool']}"}
    return record


def run(tasks: list, args, out) -> None:
    """Run the tasks on ``args.jobs`` workers, writing each record to ``out``."""
    ctx = mp.get_context("fork")
    queue = list(reversed(tasks))
    workers = [Worker(ctx, args.threads, args.memory_gb) for _ in range(min(args.jobs,
                                                                               len(tasks)))]
    limit = args.samples * len(args.checks) * len(args.tools) * args.timeout + 120
    done = 0
    start = time.monotonic()
    for w in workers:
        if queue:
            w.give(queue.pop(), limit)
    while any(w.task is not None for w in workers):
        busy = [w for w in workers if w.task is not None]
        ready = wait([w.conn for w in busy] + [w.process.sentinel for w in busy], timeout=5)
        for i, w in enumerate(workers):
            if w.task is None:
                continue
            finished, why = _serve(w, ready, out)
            if why is not None:
                _replace(workers, i, w, why, out, args)
                finished = True
            if finished:
                done += 1
                print(f"[{done}/{len(tasks)} {time.monotonic() - start:6.0f}s] "
                      f"{w.task['op']} {w.task['dtype']}" + (f" ({why})" if why else ""),
                      file=sys.stderr, flush=True)
                out.write(json.dumps({"done": [w.task["op"], w.task["dtype"]]}) + "\n")
                out.flush()
                w = workers[i]
                w.task = None
                if queue:
                    w.give(queue.pop(), limit)
    for w in workers:
        if w.process.is_alive():
            w.conn.send(None)
        w.process.join(10)
        w.stop()


def _serve(w: Worker, ready: list, out) -> tuple[bool, str | None]:
    """Read what ``w`` sent; ``(task finished, why it died or hung or None)``."""
    while w.conn in ready or w.conn.poll():
        try:
            kind, payload = w.conn.recv()
        except (EOFError, OSError):
            break
        if kind == "start":
            w.started = payload
        elif kind == "record":
            out.write(json.dumps(payload, default=str) + "\n")
            out.flush()
            w.started = None
        elif kind == "done":
            return True, None
        ready = []
    if not w.process.is_alive():
        return False, f"worker died (exit code {w.process.exitcode})"
    if time.monotonic() > w.deadline:
        return False, "worker hung past the task's time limit"
    return False, None


def _replace(workers, i, w: Worker, why: str, out, args) -> None:
    w.stop()
    if w.started is not None:
        out.write(json.dumps(_crash_record(w.started, why, args.tools), default=str) + "\n")
    fresh = Worker(mp.get_context("fork"), args.threads, args.memory_gb)
    fresh.task = w.task
    workers[i] = fresh


def _finished_pairs(path: Path) -> set:
    pairs = set()
    if path.exists():
        for line in path.read_text().splitlines():
            row = json.loads(line)
            if "done" in row:
                pairs.add(tuple(row["done"]))
    return pairs


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(ROOT / "survey"), help="results folder")
    parser.add_argument("--dtypes", default="float64,complex128",
                        help="comma-separated dtype names (default float64,complex128)")
    parser.add_argument("--all-dtypes", action="store_true",
                        help="every dtype each op supports in backward on CPU")
    parser.add_argument("--samples", type=int, default=2, help="first N samples per dtype")
    parser.add_argument("--checks", default="reverse",
                        help="comma-separated: reverse, forward, gradgrad, fwgrad_bwgrad")
    parser.add_argument("--ops", nargs="*", default=[], help="glob patterns of op names")
    parser.add_argument("--tools", default=",".join(worker.TOOLS),
                        help="comma-separated, from " + ", ".join(worker.TOOLS +
                                                               worker.EXTRA_TOOLS))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1, help="torch threads per worker")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per tool")
    parser.add_argument("--memory-gb", type=float, default=8.0,
                        help="address-space cap per worker (0: none)")
    parser.add_argument("--resume", action="store_true", help="skip (op, dtype) pairs done")
    parser.add_argument("--merge", nargs="*", default=[],
                        help="other results.jsonl whose tools join these in the summary")
    args = parser.parse_args(argv)
    args.checks = [c for c in args.checks.split(",") if c]
    args.tools = [t for t in args.tools.split(",") if t]
    unknown = set(args.tools) - set(worker.TOOLS + worker.EXTRA_TOOLS)
    if unknown:
        parser.error(f"unknown tools {sorted(unknown)}")
    return args


def main(argv=None) -> int:
    args = parse(argv)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    results = out_dir / "results.jsonl"
    if not args.resume and results.exists():
        results.unlink()
    from adcheck.opinfo import torchdb
    entries = torchdb.entries()          # imports op_db once, before the workers fork
    dtypes = None if args.all_dtypes else [d for d in args.dtypes.split(",") if d]
    tasks = plan(entries, dtypes, args.ops, _finished_pairs(results), args)
    print(f"{len(tasks)} (op, dtype) tasks on {args.jobs} workers", file=sys.stderr)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    with results.open("a") as out:
        run(tasks, args, out)
    import opdb_survey_report as report
    summary = report.summarize(report.load(results, *args.merge))
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    (out_dir / "summary.md").write_text(report.markdown(summary))
    print(f"wrote {out_dir / 'summary.md'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
