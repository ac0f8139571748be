"""What ``bench/scale.py`` prints and draws: the table, the targets, the plot."""
from __future__ import annotations

import sys

MB_LIMIT = 1024.0          # issue 16: peak memory at 100,000 inputs under 1 GiB
LARGE_N = 102400
FOUR_K = 4096
LABELS = {"torch-slow": "torch gradcheck", "torch-fast": "torch fast_mode",
          "gradcheck": "adcheck gradcheck()", "precise": "adcheck precise",
          "fast": "adcheck fast_mode", "compressed": "adcheck compressed",
          "probed": "adcheck probed (4)", "precise-refengine": "adcheck precise, refengine"}


def _runs(document: dict) -> dict:
    return {(r["function"], r["mode"], r["n"]): r for r in document["runs"]}


def _cell(run) -> str:
    if run is None:
        return ""
    if run["verdict"] == "skipped":
        return "skipped"
    if run["verdict"] not in ("passed", "failed"):
        return run["verdict"].split(":")[0]
    mark = "" if run["verdict"] == "passed" else " FAIL"
    cpu = f" ({run['cpu_seconds']:.2f} cpu)" if "cpu_seconds" in run else ""
    return f"{run['seconds']:.2f} s{cpu}, {run['peak_mb']:.0f} MB{mark}"


def print_report(document: dict, out=sys.stdout) -> None:
    """A markdown table per function (time and peak memory by mode and size),
    the canaries and the targets."""
    runs = _runs(document)
    sizes = sorted({n for (_, _, n) in runs})
    modes = [m for m in LABELS if any(m == key[1] for key in runs)]
    functions = list(dict.fromkeys(f for (f, _, _) in runs))
    print(f"load average {document.get('load_before', 0):.1f} before, "
          f"{document.get('load_after', 0):.1f} after", file=out)
    for function in functions:
        print(f"\n{function}\n\n| mode | " + " | ".join(f"{n:,}" for n in sizes) + " |",
              file=out)
        print("|---" * (len(sizes) + 1) + "|", file=out)
        for mode in modes:
            cells = [_cell(runs.get((function, mode, n))) for n in sizes]
            print(f"| {LABELS[mode]} | " + " | ".join(cells) + " |", file=out)
    print("\ncanaries (a vjp wrong by 1e-6 relative in one entry, precise):", file=out)
    for run in document.get("canaries", []):
        print(f"  {run['function']} {run['n']:,}: {_cell(run)} "
              f"{(run.get('message') or '')[:160]}", file=out)
    print("\ntargets:", file=out)
    for met, text in targets(document):
        print(f"  [{'met' if met else 'NOT met'}] {text}", file=out)


def targets(document: dict) -> list:
    """``(met, text)`` for each target of issue 16."""
    runs = _runs(document)
    found = [_precise_vs_torch(runs, mode) for mode in ("precise", "precise-refengine")]
    found.append(_memory(runs))
    found.append(_every_entry(runs, document.get("canaries", [])))
    alarms = [f"{r['function']} {r['mode']} {r['n']}" for r in runs.values()
              if r["mode"] != "torch-slow" and r["mode"] != "torch-fast"
              and r["verdict"] == "failed"]
    found.append((not alarms, "no false alarm at any size" +
                  (f": {', '.join(alarms)}" if alarms else "")))
    return found


def _precise_vs_torch(runs: dict, mode: str) -> tuple:
    slower, ratios = [], []
    for (function, m, n), torch_run in runs.items():
        if m != "torch-slow" or torch_run["verdict"] != "passed":
            continue
        ours = runs.get((function, mode, n))
        if ours is None or ours["verdict"] != "passed" or \
                ours["seconds"] > torch_run["seconds"]:
            slower.append(f"{function} {n}")
        if n == FOUR_K and ours and ours["verdict"] == "passed":
            ratios.append((function, torch_run["seconds"] / ours["seconds"],
                           _cpu_ratio(torch_run, ours)))
    three = all(r >= 3 for _, r, _ in ratios) and ratios
    text = (f"{LABELS[mode]} no slower than torch's slow gradcheck where torch finishes"
            f"{' (slower: ' + ', '.join(slower) + ')' if slower else ''}; at 4,096 inputs "
            "(wall, and CPU time in brackets) "
            + ", ".join(f"{f} {r:.1f}x ({c})" for f, r, c in ratios))
    return (not slower and bool(three), text)


def _cpu_ratio(theirs: dict, ours: dict) -> str:
    if "cpu_seconds" not in theirs or "cpu_seconds" not in ours:
        return "-"
    return f"{theirs['cpu_seconds'] / max(ours['cpu_seconds'], 1e-9):.1f}x"


def _memory(runs: dict) -> tuple:
    large = [r for (f, m, n), r in runs.items() if n == LARGE_N and "peak_mb" in r]
    worst = max(large, key=lambda r: r["peak_mb"], default=None)
    if worst is None:
        return False, "no run at 102,400 inputs"
    over = [f"{r['function']} {r['mode']} {r['peak_mb']:.0f} MB" for r in large
            if r["peak_mb"] >= MB_LIMIT]
    return (not over, f"peak memory at 102,400 inputs under 1 GiB above the baseline: largest "
            f"{worst['peak_mb']:.0f} MB ({worst['function']} {worst['mode']})"
            + (f"; over: {', '.join(over)}" if over else ""))


def _every_entry(runs: dict, canaries: list) -> tuple:
    checks = [runs.get((f, "precise", LARGE_N)) for f in ("sin", "softmax")]
    fast = [r for r in checks if r and r["verdict"] == "passed" and r["seconds"] < 10]
    caught = [c for c in canaries if c["verdict"] == "failed"]
    times = ", ".join(f"{r['function']} {r['seconds']:.1f} s" for r in checks if r)
    return (len(fast) == 2 and len(caught) == len(canaries) == 2,
            f"every entry of sin and softmax at 102,400 inputs compared in under 10 s ({times}); "
            f"a 1e-6 relative error in one entry caught in {len(caught)} of {len(canaries)}")


def plot(document: dict, path: str) -> int:
    """Time and peak memory against inputs, one column per function; 0, or 1
    (with how to install it) when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("the plot needs matplotlib (a bench-only dependency): "
              "python -m pip install matplotlib", file=sys.stderr)
        return 1
    runs = [r for r in document["runs"] if r["verdict"] in ("passed", "failed")]
    functions = list(dict.fromkeys(r["function"] for r in document["runs"]))
    fig, axes = plt.subplots(2, len(functions), figsize=(3.2 * len(functions), 6.4),
                             squeeze=False)
    for col, function in enumerate(functions):
        for mode, label in LABELS.items():
            mine = sorted((r for r in runs if r["function"] == function and r["mode"] == mode),
                          key=lambda r: r["n"])
            if not mine:
                continue
            style = "--" if mode.startswith("torch") else "-"
            xs = [r.get("inputs", r["n"]) for r in mine]
            for row, key in ((0, "seconds"), (1, "peak_mb")):
                axes[row][col].plot(xs, [max(r[key], 1e-2) for r in mine], style, marker="o",
                                    markersize=3, label=label)
        axes[0][col].set_title(function)
        for row, what in ((0, "seconds"), (1, "peak MB above baseline")):
            axes[row][col].set_xscale("log")
            axes[row][col].set_yscale("log")
            axes[row][col].set_xlabel("inputs")
            axes[row][0].set_ylabel(what)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8)
    fig.suptitle(f"gradient checks by size (torch 2.13 CPU, one thread, float64; load "
                 f"{document.get('load_before', 0):.1f} to {document.get('load_after', 0):.1f})",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0.07, 1, 0.96))
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")
    return 0
