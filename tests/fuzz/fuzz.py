"""The differential fuzzer's command: generate, run on both engines, shrink, report.

    python tests/fuzz/fuzz.py --programs 20000 --seed 1 --out fuzz-findings

Program ``i`` of a run is drawn from ``Random(seed * 1_000_003 + i)``, so any
program can be regenerated from its seed and index. Each class of difference
(its kind and statement template) is shrunk once, from its first program;
the smallest reproducer of each class is written to ``--out`` with a
summary (findings.md). Differences in ``fuzz_known.KNOWN`` (deliberate, in
docs/differences.md) are counted apart; the exit status is 1 when a
difference outside KNOWN and OPEN was found. Programs run in a child
process: one that crashes an engine is reported as a class of its own.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fuzz_engine import Difference  # noqa: E402
from fuzz_known import classify  # noqa: E402
from fuzz_program import Program, Stmt, generate  # noqa: E402
from fuzz_shrink import difference, reproducer, shrink  # noqa: E402


def engines():
    import torch

    import adcheck.refengine as refengine
    return refengine, torch


def program_for(seed: int, index: int):
    """Program ``index`` of the run with ``seed``."""
    return generate(random.Random(seed * 1_000_003 + index))


def work(seed: int, start: int, count: int, out: Path, shrink_budget: int = 400) -> None:
    """Fuzz programs ``start`` to ``count``, appending to ``out/findings.jsonl``: a
    repeat of a class seen before as its key, a new class shrunk and whole.
    ``out/at`` names the program being run, for the parent when this dies."""
    pair = engines()
    journal = out / "findings.jsonl"
    seen = {tuple(json.loads(line)["key"]) for line in journal.read_text().splitlines()} \
        if journal.exists() else set()
    with journal.open("a") as sink:
        for i in range(start, count):
            (out / "at").write_text(str(i))
            if os.environ.get("ADCHECK_FUZZ_CRASH_AT") == str(i):
                os.abort()      # the test of crash handling plants a crash here
            program = program_for(seed, i)
            d = difference(program, pair)
            if d is None:
                continue
            key = d.key + (classify(d, program.source(), program, pair),)
            record = {"key": key, "index": i}
            if key not in seen:
                seen.add(key)
                small, d_small = shrink(program, pair, budget=shrink_budget)
                d = d_small or d
                record.update(source=small.source(), mode=small.mode, label=d.label,
                              refengine=d.refengine, torch=d.torch)
            sink.write(json.dumps(record) + "\n")
            sink.flush()


def run(count: int, seed: int, out: Path, report=print) -> dict:
    """Fuzz ``count`` programs in child processes (a crash of either engine ends a
    child; the run goes on after the program that crashed). Returns the classes:
    {key: [programs, first record]}."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "findings.jsonl").write_text("")
    start = 0
    while start < count:
        done = subprocess.run([sys.executable, __file__, "--worker", "--seed", str(seed),
                               "--start", str(start), "--programs", str(count),
                               "--out", str(out)])
        if done.returncode == 0:
            break
        crashed = int((out / "at").read_text())
        report(f"program {crashed}: an engine crashed (exit status {done.returncode})")
        alone = _whose_crash(seed, crashed, out)
        with (out / "findings.jsonl").open("a") as sink:
            found = Difference("crash", "exit", "", "", f"exit {done.returncode}; {alone}")
            label = classify(found, program_for(seed, crashed).source())
            sink.write(json.dumps({"key": ["crash", "exit", label], "index": crashed,
                                   "source": program_for(seed, crashed).source(),
                                   "mode": program_for(seed, crashed).mode, "label": "",
                                   "refengine": "", "torch": found.torch}) + "\n")
        start = crashed + 1
    classes: dict = {}
    for line in (out / "findings.jsonl").read_text().splitlines():
        record = json.loads(line)
        key = tuple(record["key"])
        if key in classes:
            classes[key][0] += 1
        else:
            classes[key] = [1, record]
            report(f"program {record['index']}: {key[0]} at {key[1]!r} [{key[2]}]")
    return classes


def _child(*args, env=None) -> int:
    return subprocess.run([sys.executable, __file__, *args], capture_output=True,
                          env=env).returncode


def _whose_crash(seed: int, index: int, out: Path) -> str:
    """Which engine crashed on program ``index``: "torch alone: exit N" for the
    program run again on torch alone, or, when torch finishes it, for what the
    worker was running when it crashed (a second run that classifying makes of
    the program, a rerun or its leaves moved): the worker is run on that program
    again with observe's trace, and the last program traced runs alone on the
    engine that was running it (its text kept in ``crash_<index>.json``)."""
    alone = _child("--torch-alone", "--seed", str(seed), "--start", str(index))
    if alone != 0:
        return f"torch alone: exit {alone}"
    trace, scratch = out / f"crash_{index}.json", out / "replay"
    trace.unlink(missing_ok=True)
    scratch.mkdir(exist_ok=True)
    (scratch / "findings.jsonl").write_text("")
    again = _child("--worker", "--seed", str(seed), "--start", str(index), "--programs",
                   str(index + 1), "--out", str(scratch),
                   env=dict(os.environ, ADCHECK_FUZZ_TRACE=str(trace)))
    if again == 0 or not trace.exists():
        return f"torch alone: exit {alone}"
    engine = json.loads(trace.read_text())["engine"]
    status = _child("--replay-alone", str(trace))
    name = "torch" if engine == "torch" else "refengine"
    return f"torch alone: exit {alone}; a second run of it ({trace.name}) on {name} alone: " \
           f"exit {status}"


def write_findings(classes: dict, seed: int, count: int, out: Path) -> collections.Counter:
    """A reproducer per class and findings.md in ``out``; the count of each label."""
    labels = collections.Counter()
    lines = [f"# Fuzzer findings: {count} programs, seed {seed}", ""]
    ordered = sorted(classes.items(), key=lambda kv: -kv[1][0])
    for n, (key, (hits, r)) in enumerate(ordered):
        labels[key[2]] += 1
        name = f"repro_{n:03d}_{key[0]}.py"
        program = Program(tuple(Stmt(line, None) for line in _statements(r["source"])),
                          r["mode"])
        found = Difference(key[0], key[1], r["label"], r["refengine"], r["torch"])
        (out / name).write_text(reproducer(program, found, name))
        lines += [f"## {n}. [{key[2]}] {key[0]} at `{key[1]}`: {hits} programs "
                  f"(first: index {r['index']})", "", "```python", r["source"], "```",
                  f"- refengine: `{r['refengine'][:240]}`", f"- torch: `{r['torch'][:240]}`",
                  f"- reproducer: {name}", ""]
    (out / "findings.md").write_text("\n".join(lines))
    return labels


def _statements(source: str) -> list:
    """The statements of a program's text (a ``with`` line keeps its body)."""
    out = []
    for line in source.splitlines():
        if line.startswith("    ") and out:
            out[-1] += "\n" + line
        else:
            out.append(line)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("fuzz-findings"))
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--torch-alone", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--replay-alone", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        work(args.seed, args.start, args.programs, args.out)
        return 0
    if args.torch_alone:
        import torch
        from fuzz_engine import observe
        observe(program_for(args.seed, args.start), torch)
        return 0
    if args.replay_alone:
        # a program a trace names, on the engine that was running it
        from fuzz_engine import observe
        traced = json.loads(args.replay_alone.read_text())
        program = Program(tuple(Stmt(line, None) for line in _statements(traced["source"])),
                          traced["mode"])
        observe(program, dict(zip(("adcheck.refengine", "torch"), engines()))[traced["engine"]])
        return 0
    begin = time.time()
    classes = run(args.programs, args.seed, args.out,
                  report=lambda text: print(f"[{time.time() - begin:7.1f}s] {text}", flush=True))
    labels = write_findings(classes, args.seed, args.programs, args.out)
    print(f"{args.programs} programs in {time.time() - begin:.0f}s: {len(classes)} classes of "
          f"difference ({dict(labels)}); see {args.out / 'findings.md'}")
    return 1 if labels["new"] else 0


if __name__ == "__main__":
    sys.exit(main())
