"""What ``bench/vs_torch.py`` prints: the per-op table, the totals against the
anchor figures, the targets, the canaries, how our side batched, and the
problems."""
from __future__ import annotations

# --------------------------------------------------------------------------
# Anchor figures and targets (from the issue)
# --------------------------------------------------------------------------

#: torch 2.13 CPU on a 2-core machine, over the same 49 ops, total ms per mode
ANCHOR_MS = {"slow": 141.0, "slow+fwd": 381.0, "fast": 29.0, "gradgrad": 507.0}
ANCHOR_IMPORT_TORCH_S = 1.05
#: issue 34's targets: torch's time over ours per mode, on an idle machine
TARGET_RATIO = {"slow+fwd": 5.0, "slow": 3.0, "gradgrad": 4.0, "fast": 1.0}
TARGET_SLOW_PER_OP = 1.0                # no op slower than torch in slow mode
TARGET_SWEEP_S = 10.0                   # adcheck ops, whole registry, 2 cores
TARGET_HELP_S = 0.3                     # adcheck --help


def print_canaries(rows: list[dict]):
    wrong = [r for r in rows if r["ours"] != r["expected"] or r["torch"] != r["expected"]]
    print(f"\ncanaries (planted errors, not timed): {len(rows) - len(wrong)} of {len(rows)} "
          "verdicts as expected on both sides")
    for r in wrong:
        for side in ("ours", "torch"):
            if r[side] != r["expected"]:
                msg = r[f"{side}_message"].splitlines()[0][:120] if r[f"{side}_message"] else ""
                print(f"  WRONG  {r['op']:15} {r['mode']:9} {side}: {r[side]}, expected "
                      f"{r['expected']} {msg}")


def print_batching(info: dict | None, batching: str):
    if batching != "default":
        return
    if info is None:
        print("\nbatching: our reports do not say how Jacobians were built")
        return
    print(f"\nbatching (our side, from one untimed check per op and mode): "
          f"{'no fallback to the loop, no op looped inside vmap' if not info else f'{len(info)} exceptions'}")
    for key, entry in info.items():
        if "error" in entry:
            what = entry["error"]
        elif entry.get("fallback"):
            what = f"fell back to the loop: {entry['fallback']}"
        elif entry.get("looped_ops"):
            what = "looped inside vmap: " + ", ".join(
                f"{name} x{n}" for name, n in sorted(entry["looped_ops"].items()))
        else:
            what = "no batched call"
        print(f"  {key:26} {what[:150]}")


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------


def _ms(seconds) -> str:
    return "-" if seconds is None else f"{1e3 * seconds:.1f}"


def _ratio(theirs, ours) -> float | None:
    if theirs is None or ours is None or ours <= 0:
        return None
    return theirs / ours


def _fmt_ratio(r) -> str:
    return "-" if r is None else f"{r:.2f}"


FLAG = {"passed": "", "failed": "!", "raised": "E"}


def print_table(ops: list, modes: list[str], results: dict):
    print("\nper op: median ms, ours (refengine + adcheck's gradcheck) and torch "
          "(torch.autograd), x = torch/ours (above 1: ours faster)")
    print("flags: ! the check failed, E it raised (not timed)\n")
    head = f"{'op':17} "
    sub = f"{'':17} "
    for mode in modes:
        head += f"| {mode:^23} "
        sub += f"| {'ours':>8} {'torch':>7} {'x':>6} "
    print(head)
    print(sub)
    print("-" * len(sub))
    for op in ops:
        line = f"{op.name:17} "
        for mode in modes:
            r = results[mode][op.name]
            o, t = r["ours"], r["torch"]
            line += (f"| {_ms(o.median) + FLAG[o.verdict]:>8} {_ms(t.median) + FLAG[t.verdict]:>7}"
                     f" {_fmt_ratio(_ratio(t.median, o.median)):>6} ")
        print(line)


def totals(ops: list, modes: list[str], results: dict) -> dict:
    out = {}
    for mode in modes:
        both = [op.name for op in ops
                if results[mode][op.name]["ours"].times and results[mode][op.name]["torch"].times]
        ours = sum(results[mode][n]["ours"].median for n in both)
        theirs = sum(results[mode][n]["torch"].median for n in both)
        ours_best = sum(min(results[mode][n]["ours"].times) for n in both)
        theirs_best = sum(min(results[mode][n]["torch"].times) for n in both)
        out[mode] = dict(ops=len(both), excluded=[op.name for op in ops if op.name not in both],
                         ours_s=ours, torch_s=theirs, ratio=_ratio(theirs, ours),
                         ours_best_s=ours_best, torch_best_s=theirs_best,
                         best_ratio=_ratio(theirs_best, ours_best))
    return out


def print_totals(tot: dict, n_ops: int):
    print("\ntotals (ops that ran on both sides): sums of the per-op medians (the "
          "targets use these),\nand of the per-op best times (less sensitive to a busy machine)")
    print(f"{'mode':9} {'ops':>4} {'ours ms':>9} {'torch ms':>9} {'torch/ours':>10} "
          f"{'| best: ours':>12} {'torch':>8} {'ratio':>6} {'| anchor ms':>11} "
          f"{'torch/anchor':>12}")
    for mode, t in tot.items():
        anchor = ANCHOR_MS.get(mode)
        print(f"{mode:9} {t['ops']:>4} {_ms(t['ours_s']):>9} {_ms(t['torch_s']):>9} "
              f"{_fmt_ratio(t['ratio']):>10} {_ms(t['ours_best_s']):>12} "
              f"{_ms(t['torch_best_s']):>8} {_fmt_ratio(t['best_ratio']):>6} {anchor:>11.0f} "
              f"{_fmt_ratio(1e3 * t['torch_s'] / anchor if t['ops'] else None):>12}")
        if t["excluded"]:
            print(f"{'':9} excluded (raised on a side): {', '.join(t['excluded'])}")
    if any(t["ops"] != n_ops for t in tot.values()):
        print("(the anchors are over all 49 ops; a total over fewer is not comparable to them)")


def slow_per_op(results: dict) -> tuple:
    """torch/ours by op in slow mode: of the medians, and of the best times."""
    slow = results.get("slow", {})
    medians = {name: r["torch"].median / r["ours"].median for name, r in slow.items()
               if r["ours"].median and r["torch"].median}
    best = {name: min(r["torch"].times) / min(r["ours"].times) for name, r in slow.items()
            if r["ours"].times and r["torch"].times}
    return medians, best


def targets(tot: dict, help_t: dict | None, sweep: dict | None, full: bool,
            slow_per_op: dict | None = None, slow_best: dict | None = None) -> list[dict]:
    """Issue 34's targets, PASS / MISS / n/a, judged on the medians; ``slow_per_op``:
    torch/ours by op in slow mode (``slow_best``: of the best times). The ratios
    of the best times are shown beside: on a busy machine a median may be a run
    another process took turns from, which the best is not."""
    rows = []

    def row(name, value, shown, ok):
        rows.append(dict(target=name, value=value, measured=shown,
                         status="n/a" if ok is None else ("PASS" if ok else "MISS")))

    for mode, goal in TARGET_RATIO.items():
        r = tot[mode]["ratio"] if tot.get(mode) else None
        best = tot[mode]["best_ratio"] if tot.get(mode) else None
        row(f"{mode}: ours >= {goal:g}x faster than torch", r,
            f"{_fmt_ratio(r)}x (best times: {_fmt_ratio(best)}x)" if r else "not measured",
            None if r is None else r >= goal)
    if slow_per_op:
        slower = sorted((r, name) for name, r in slow_per_op.items() if r < TARGET_SLOW_PER_OP)
        shown = ("none" if not slower else
                 f"{len(slower)}: " + ", ".join(f"{n} {r:.2f}x" for r, n in slower[:8]))
        if slow_best is not None:
            behind = sorted((r, name) for name, r in slow_best.items() if r < TARGET_SLOW_PER_OP)
            shown += (" (best times: " + (", ".join(f"{n} {r:.2f}x" for r, n in behind[:8])
                                          or "none") + ")")
        row("slow: no op slower than torch", len(slower), shown, not slower)
    else:
        row("slow: no op slower than torch", None, "not measured", None)
    if sweep and sweep.get("seconds") is not None:
        row(f"adcheck ops -q, whole registry < {TARGET_SWEEP_S:g} s", sweep["seconds"],
            f"{sweep['seconds']:.1f} s (exit status {sweep['exit_status']})",
            sweep["seconds"] < TARGET_SWEEP_S)
    else:
        row(f"adcheck ops -q, whole registry < {TARGET_SWEEP_S:g} s", None,
            sweep.get("note", "not measured") if sweep else "not measured (use --sweep)", None)
    if help_t:
        row(f"adcheck --help < {TARGET_HELP_S:g} s", help_t["best_s"],
            f"{help_t['best_s']:.3f} s (best of {help_t['runs']})",
            help_t["best_s"] < TARGET_HELP_S)
    else:
        row(f"adcheck --help < {TARGET_HELP_S:g} s", None, "not measured", None)
    for t in rows:
        t["subset"] = not full and t["target"].startswith(tuple(TARGET_RATIO))
    return rows


def print_targets(rows: list[dict]):
    print("\ntargets (measured in this run)")
    for t in rows:
        note = "  (on a subset of the ops)" if t["subset"] else ""
        print(f"  {t['status']:4}  {t['target']}: {t['measured']}{note}")


def problems(ops: list, modes: list[str], results: dict) -> list[dict]:
    out = []
    for mode in modes:
        for op in ops:
            r = results[mode][op.name]
            o, t = r["ours"], r["torch"]
            issues = []
            if o.verdict != t.verdict:
                issues.append(f"disagree: ours {o.verdict}, torch {t.verdict}")
            for side, x in (("ours", o), ("torch", t)):
                if x.verdict != "passed":
                    issues.append(f"{side} {x.verdict}: {x.message.splitlines()[0] if x.message else ''}")
                flips = sorted(set(x.timed_verdicts) - {x.verdict})
                if flips:
                    issues.append(f"{side} timed runs also gave: {', '.join(flips)} "
                                  f"({x.message.splitlines()[0] if x.message else ''})")
                for w in x.warnings:
                    issues.append(f"{side} warned: {w.splitlines()[0]}")
            if issues:
                out.append(dict(op=op.name, mode=mode, issues=issues))
    return out


def print_problems(rows: list[dict], missing: list[str]):
    print("\nproblems (a failed or raising check, a disagreement, an unexpected warning)")
    if not rows and not missing:
        print("  none: every check passed on both sides")
    for m in missing:
        print(f"  op cannot be evaluated: {m[:200]}")
    for r in rows:
        for issue in r["issues"]:
            print(f"  {r['op']:17} {r['mode']:9} {issue[:160]}")
