"""adcheck against torch.autograd.gradcheck: the same ops, inputs and modes, side by side.

Run (from anywhere; the checkout this file is in is the one measured):

    python bench/vs_torch.py                     # 49 ops x 4 modes, 5 repeats
    python bench/vs_torch.py --sweep             # also time `adcheck ops -q` over the registry
    python bench/vs_torch.py --ops 'linalg.*' --ops 'c128.*' --modes slow,gradgrad --repeat 3
    python bench/vs_torch.py --no-batch          # our side with gradcheck.set_batching(False)
    python bench/vs_torch.py --json vs_torch.json --sweep
    python bench/vs_torch.py --list              # the op list, shapes and dtypes

What it does, in one process:

- 49 ops at the sizes of the anchor figures (elementwise unary on 5x5, binary
  3x4 with 4 broadcasting, reductions on 4x5, 4x4 linear algebra, conv2d of
  (2,3,6,6) with (4,3,3,3), 8 of them in complex128). Each op is written once
  as a function of an engine module ``E`` (``refengine`` or ``torch``), so
  both sides differentiate the identical formula; its inputs are built once
  in NumPy from a fixed seed (float64 / complex128) and converted to each
  engine's leaf tensors that require grad.
- Four modes: ``slow`` (gradcheck defaults), ``slow+fwd``
  (``check_forward_ad=True``), ``fast`` (``fast_mode=True``) and
  ``gradgrad`` (gradgradcheck defaults). Ours is ``gradcheck.gradcheck`` /
  ``gradcheck.gradgradcheck`` on refengine tensors, theirs
  ``torch.autograd.gradcheck`` / ``gradgradcheck`` on torch tensors.
- Per op and mode: one untimed run per side that records the verdict
  (passed, check failed, or raised) and the warnings, then N timed repeats
  interleaved ours, torch, ours, torch, ...; the median per side is kept.
  Ratios are torch / ours: above 1 means ours is faster.
- Totals per mode count only the ops that ran on both sides without raising.
- torch runs on one intra-op thread by default (``--torch-threads 0`` keeps
  its default of one per core). These tensors are too small for a second
  thread to pay off, and when the machine is busy torch's thread-pool waits
  inflate its times many fold, which would flatter our ratios (measured at a
  load average of 11 on 2 cores: torch's slow mode over the 49 ops took
  0.6 to 1.7 s on one thread, 3.5 to 22 s on two). NumPy's BLAS is left as
  it is. The load average before and after is printed and recorded; compare
  absolute times with the anchors only on an idle machine.
- In subprocesses: ``python -c "import torch"`` (the anchor, best and first of
  3), ``adcheck --help`` (best of 5) and, with ``--sweep``, ``adcheck ops -q``
  over the whole registry (wall time and exit status).

A benchmark prints; it asserts nothing. Every check still really runs, and
every op where a side fails a check, raises, warns unexpectedly, or where the
two sides disagree is listed under "problems", so a fast wrong answer cannot
hide in the totals. Three canaries (custom Functions with a planted error in
the vjp, the jvp, or the second derivative) run once per mode on both sides,
untimed; any verdict other than the expected one is printed as WRONG.
"""
from __future__ import annotations

import argparse
import fnmatch
import gc
import importlib
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import gradcheck  # noqa: E402  (after the path: measure this checkout)
import refengine  # noqa: E402

# --------------------------------------------------------------------------
# Anchor figures and targets (from the issue)
# --------------------------------------------------------------------------

#: torch 2.13 CPU on a 2-core machine, over the same 49 ops, total ms per mode
ANCHOR_MS = {"slow": 141.0, "slow+fwd": 381.0, "fast": 29.0, "gradgrad": 507.0}
ANCHOR_IMPORT_TORCH_S = 1.05
TARGET_SLOWFWD_VS_TORCH_SLOWFWD = 3.0   # ours slow+fwd at least 3x faster than torch's
TARGET_SLOWFWD_VS_TORCH_SLOW = 1.0      # ... and not slower than torch's plain slow mode
TARGET_GRADGRAD = 2.0                   # ours gradgradcheck at least 2x faster
TARGET_SWEEP_S = 60.0                   # adcheck ops, whole registry, 2 cores
TARGET_HELP_S = 0.3                     # adcheck --help

MODES = {
    # name: (which check, keyword arguments, the same for both sides)
    "slow": ("gradcheck", {}),
    "slow+fwd": ("gradcheck", {"check_forward_ad": True}),
    "fast": ("gradcheck", {"fast_mode": True}),
    "gradgrad": ("gradgradcheck", {}),
}

#: Warnings that are silenced, each with why it is expected. Everything else
#: a check emits is recorded and listed under "problems". The inputs here are
#: all float64 / complex128, so torch's "not a double precision floating point"
#: warning is *not* expected and stays visible (it would mean a bench bug).
EXPECTED_WARNINGS: list[tuple[str, str, str]] = [
    # (side, message regex, reason)
    ("torch", r"DeprecationWarning: `torch\.jit\.script` is deprecated",
     "the first make_dual of a process imports torch._decomp.decompositions_for_jvp, "
     "which registers its decompositions with torch.jit.script (torch 2.13)"),
]

# --------------------------------------------------------------------------
# The op list: each op once, as a function of the engine module E
# --------------------------------------------------------------------------


@dataclass
class Op:
    name: str
    family: str
    fn: Callable            # fn(E, *tensors)
    arrays: list            # NumPy inputs, built once
    tensors: dict = field(default_factory=dict)   # engine name -> tuple of leaves

    def func(self, E):
        fn = self.fn
        return lambda *xs: fn(E, *xs)

    def inputs(self, E):
        if E.__name__ not in self.tensors:
            self.tensors[E.__name__] = tuple(
                E.from_numpy(np.array(a, copy=True)).requires_grad_() for a in self.arrays)
        return self.tensors[E.__name__]

    def describe(self) -> str:
        return ", ".join(f"{a.dtype}{list(a.shape)}" for a in self.arrays)


def build_ops(seed: int = 0) -> list[Op]:
    rng = np.random.default_rng(seed)

    def u(*shape, lo=-1.0, hi=1.0):
        return rng.uniform(lo, hi, shape)

    def pos(*shape):                      # log, sqrt, ... : away from 0
        return rng.uniform(0.5, 2.0, shape)

    def signed(*shape):                   # away from 0, either sign
        return rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape)

    def c(*shape, re_lo=-1.0):           # complex128
        return rng.uniform(re_lo, 1.0, shape) + 1j * rng.uniform(-1.0, 1.0, shape)

    def c_away(*shape):                   # complex128, |z| >= 0.5, Re z > 0
        return rng.uniform(0.5, 1.5, shape) + 1j * rng.uniform(-1.0, 1.0, shape)

    def wellcond(n, complex_=False):      # 4x4, well conditioned
        a = rng.standard_normal((n, n))
        if complex_:
            a = a + 1j * rng.standard_normal((n, n))
        return a + 3.0 * np.eye(n)

    def half_spd(n):                      # S / 2 with S symmetric positive definite
        a = rng.standard_normal((n, n))
        return (a @ a.T + n * np.eye(n)) / 2.0

    ops = []

    def add(name, family, fn, *arrays):
        ops.append(Op(name, family, fn, list(arrays)))

    # elementwise unary, 5x5 (15)
    for name in ("sin", "cos", "tan", "exp", "expm1", "tanh", "sigmoid", "atan", "erf"):
        add(name, "unary", (lambda n: lambda E, x: getattr(E, n)(x))(name), u(5, 5))
    for name in ("log", "log1p", "sqrt", "rsqrt"):
        add(name, "unary", (lambda n: lambda E, x: getattr(E, n)(x))(name), pos(5, 5))
    add("asin", "unary", lambda E, x: E.asin(x), u(5, 5, lo=-0.9, hi=0.9))
    add("reciprocal", "unary", lambda E, x: E.reciprocal(x), signed(5, 5))

    # binary, 3x4 with 4 (broadcasting) (8)
    add("add", "binary", lambda E, x, y: E.add(x, y), u(3, 4), u(4))
    add("sub", "binary", lambda E, x, y: E.sub(x, y), u(3, 4), u(4))
    add("mul", "binary", lambda E, x, y: E.mul(x, y), u(3, 4), u(4))
    add("div", "binary", lambda E, x, y: E.div(x, y), u(3, 4), signed(4))
    add("pow", "binary", lambda E, x, y: E.pow(x, y), pos(3, 4), u(4))
    add("atan2", "binary", lambda E, x, y: E.atan2(x, y), u(3, 4), signed(4))
    add("maximum", "binary", lambda E, x, y: E.maximum(x, y), u(3, 4), u(4))
    add("hypot", "binary", lambda E, x, y: E.hypot(x, y), signed(3, 4), signed(4))

    # reductions, 4x5 (10)
    add("sum", "reduction", lambda E, x: E.sum(x), u(4, 5))
    add("mean", "reduction", lambda E, x: E.mean(x, dim=1), u(4, 5))
    add("prod", "reduction", lambda E, x: E.prod(x, dim=1), signed(4, 5))
    add("amax", "reduction", lambda E, x: E.amax(x, dim=1), u(4, 5))
    add("logsumexp", "reduction", lambda E, x: E.logsumexp(x, dim=1), u(4, 5))
    add("var", "reduction", lambda E, x: E.var(x, dim=1), u(4, 5))
    add("std", "reduction", lambda E, x: E.std(x, dim=1), u(4, 5))
    add("norm", "reduction", lambda E, x: E.norm(x), u(4, 5))
    add("softmax", "reduction", lambda E, x: E.nn.functional.softmax(x, dim=1), u(4, 5))
    add("cumsum", "reduction", lambda E, x: E.cumsum(x, dim=1), u(4, 5))

    # linear algebra, 4x4 (7); trace is not in refengine
    add("matmul", "linalg", lambda E, a, b: E.matmul(a, b), u(4, 4), u(4, 4))
    add("linalg.det", "linalg", lambda E, a: E.linalg.det(a), wellcond(4))
    add("linalg.slogdet", "linalg", lambda E, a: E.linalg.slogdet(a)[1], wellcond(4))
    add("linalg.inv", "linalg", lambda E, a: E.linalg.inv(a), wellcond(4))
    add("linalg.solve", "linalg", lambda E, a, b: E.linalg.solve(a, b), wellcond(4), u(4, 4))
    # cholesky reads one triangle: differentiate through x + x^T as OpInfo does
    add("linalg.cholesky", "linalg", lambda E, a: E.linalg.cholesky(a + a.mT), half_spd(4))
    add("linalg.qr", "linalg", lambda E, a: tuple(E.linalg.qr(a)), wellcond(4))

    # conv2d (1)
    add("conv2d", "nn", lambda E, x, w: E.nn.functional.conv2d(x, w),
        u(2, 3, 6, 6), u(4, 3, 3, 3))

    # complex128 (8)
    add("c128.exp", "complex", lambda E, z: E.exp(z), c(5, 5))
    add("c128.log", "complex", lambda E, z: E.log(z), c_away(5, 5))
    add("c128.abs", "complex", lambda E, z: E.abs(z), c_away(5, 5))
    add("c128.mul", "complex", lambda E, z, w: E.mul(z, w), c(3, 4), c(4))
    add("c128.div", "complex", lambda E, z, w: E.div(z, w), c(3, 4), c_away(4))
    add("c128.sum", "complex", lambda E, z: E.sum(z, dim=1), c(4, 5))
    add("c128.matmul", "complex", lambda E, a, b: E.matmul(a, b), c(4, 4), c(4, 4))
    add("c128.linalg.det", "complex", lambda E, a: E.linalg.det(a), wellcond(4, True))
    return ops


# --------------------------------------------------------------------------
# Canaries: formulas with a planted error, so that a fast check that checks
# nothing cannot pass unnoticed. Each mode must fail exactly where expected.
# --------------------------------------------------------------------------

_CANARY_CLASSES: dict = {}


def canary_functions(E) -> dict:
    """Three custom Functions on engine ``E``, each wrong in one place."""
    if E.__name__ in _CANARY_CLASSES:
        return _CANARY_CLASSES[E.__name__]
    Function = E.autograd.Function

    class BadVjp(Function):          # sin with the vjp off by a factor 2
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            ctx.save_for_forward(x)
            return E.sin(x)

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * g * E.cos(x)

        @staticmethod
        def jvp(ctx, t):
            x, = ctx.saved_tensors
            return t * E.cos(x)

    class BadJvp(Function):          # sin with the jvp off by a sign
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            ctx.save_for_forward(x)
            return E.sin(x)

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * E.cos(x)

        @staticmethod
        def jvp(ctx, t):
            x, = ctx.saved_tensors
            return -t * E.cos(x)

    class WrongCos(Function):        # cos whose derivative has the wrong sign
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            ctx.save_for_forward(x)
            return E.cos(x)

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * E.sin(x)

        @staticmethod
        def jvp(ctx, t):
            x, = ctx.saved_tensors
            return t * E.sin(x)

    class BadSecond(Function):       # sin, right first derivative, wrong second
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            ctx.save_for_forward(x)
            return E.sin(x)

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * WrongCos.apply(x)

        @staticmethod
        def jvp(ctx, t):
            x, = ctx.saved_tensors
            return t * WrongCos.apply(x)

    _CANARY_CLASSES[E.__name__] = found = dict(vjp=BadVjp, jvp=BadJvp, second=BadSecond)
    return found


#: canary -> the modes that must fail (every other mode must pass)
CANARIES = {
    # gradgradcheck differentiates the (wrong) vjp by AD and by differences
    # alike, so a wrong first derivative passes it: only the first order fails
    "canary.bad_vjp": ("vjp", {"slow", "slow+fwd", "fast"}),
    "canary.bad_jvp": ("jvp", {"slow+fwd"}),
    "canary.bad_2nd": ("second", {"gradgrad"}),
}


def build_canaries(seed: int = 0) -> list[Op]:
    rng = np.random.default_rng(seed + 1)
    return [Op(name, "canary", (lambda k: lambda E, x: canary_functions(E)[k].apply(x))(key),
               [rng.uniform(-1.0, 1.0, (3, 4))])
            for name, (key, _) in CANARIES.items()]


def run_canaries(modes: list[str], sides: dict, seed: int) -> list[dict]:
    rows = []
    for op in build_canaries(seed):
        must_fail = CANARIES[op.name][1]
        for mode in modes:
            kind, kwargs = MODES[mode]
            expected = "failed" if mode in must_fail else "passed"
            row = dict(op=op.name, mode=mode, expected=expected)
            for side, (E, checks) in sides.items():
                verdict, message, _, _ = _call(side, checks[kind], op.func(E), op.inputs(E),
                                               kwargs, True)
                row[side] = verdict
                row[f"{side}_message"] = message
            rows.append(row)
    return rows


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


# --------------------------------------------------------------------------
# How our side built its Jacobians (batched, looped, fell back)
# --------------------------------------------------------------------------


def batching_info(ops: list[Op], modes: list[str]) -> dict | None:
    """From one untimed ``gradcheck.check`` per op and mode, the report's
    ``batching`` entry: where vmap fell back to the loop, and which ops ran
    once per example inside vmap. None when reports have no such entry."""
    out = {}
    for mode in modes:
        kind, kwargs = MODES[mode]
        options = dict(order=2) if kind == "gradgradcheck" else dict(kwargs)
        for op in ops:
            try:
                report = gradcheck.check(op.func(refengine), op.inputs(refengine), seed=0,
                                         **options)
            except Exception as exc:  # noqa: BLE001 - reported with the rest
                out[f"{op.name} {mode}"] = dict(error=f"{type(exc).__name__}: {exc}"[:200])
                continue
            info = getattr(report, "batching", None)
            if info is None:
                return None
            if info.get("fallback") or info.get("looped_ops") or not info.get("batched_calls"):
                out[f"{op.name} {mode}"] = dict(info)
    return out


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


def check_ops_exist(ops: list[Op], engines) -> list[str]:
    """Names of ops whose formula cannot even be evaluated on an engine."""
    missing = []
    for op in ops:
        for E in engines:
            try:
                with E.no_grad():
                    op.func(E)(*op.inputs(E))
            except Exception as exc:  # noqa: BLE001 - reported, never hidden
                missing.append(f"{op.name} on {E.__name__}: {type(exc).__name__}: {exc}")
    return missing


# --------------------------------------------------------------------------
# Running one check and timing the pair
# --------------------------------------------------------------------------


@dataclass
class Outcome:
    """One side of one (op, mode): its verdict and its times."""
    verdict: str = "passed"       # passed | failed | raised
    message: str = ""
    warnings: list = field(default_factory=list)
    times: list = field(default_factory=list)
    timed_verdicts: list = field(default_factory=list)

    @property
    def median(self):
        return statistics.median(self.times) if self.times else None

    def to_dict(self):
        return dict(verdict=self.verdict, message=self.message, warnings=self.warnings,
                    median_ms=None if self.median is None else 1e3 * self.median,
                    times_ms=[1e3 * t for t in self.times],
                    timed_verdicts=self.timed_verdicts)


def _expected(side: str, message: str) -> bool:
    return any(s == side and re.search(rx, message) for s, rx, _ in EXPECTED_WARNINGS)


def _call(side: str, check: Callable, func, inputs, kwargs, raise_exception: bool):
    """Run one check; returns (verdict, message, unexpected warnings, seconds)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        try:
            ok = check(func, inputs, raise_exception=raise_exception, **kwargs)
            verdict, message = ("passed" if ok else "failed"), ""
        except Exception as exc:  # noqa: BLE001 - a benchmark reports, it does not stop
            failed = isinstance(exc, gradcheck.GradcheckError) or (
                type(exc).__name__ == "GradcheckError")
            verdict = "failed" if failed else "raised"
            message = f"{type(exc).__name__}: {exc}"
        seconds = time.perf_counter() - start
    found = []
    for w in caught:
        text = f"{w.category.__name__}: {w.message}"
        if not _expected(side, text) and text not in found:
            found.append(text)
    return verdict, message, found, seconds


def run_pair(op: Op, mode: str, repeat: int, sides: dict) -> dict:
    """Ours and torch's on one op in one mode: a verdict run each, then
    ``repeat`` interleaved timed runs (ours, torch, ours, torch, ...)."""
    kind, kwargs = MODES[mode]
    prepared = {}
    result = {}
    for side, (E, checks) in sides.items():
        func, inputs = op.func(E), op.inputs(E)
        verdict, message, warns, _ = _call(side, checks[kind], func, inputs, kwargs, True)
        result[side] = Outcome(verdict, message, warns)
        if verdict != "raised":   # a side that cannot run the op is not timed
            prepared[side] = (checks[kind], func, inputs)
    for _ in range(repeat):
        for side, (check, func, inputs) in prepared.items():
            verdict, message, warns, seconds = _call(side, check, func, inputs, kwargs, False)
            out = result[side]
            out.times.append(seconds)
            out.timed_verdicts.append(verdict)
            for w in warns:
                if w not in out.warnings:
                    out.warnings.append(w)
            if verdict == "raised" and not out.message:
                out.message = message
    return result


# --------------------------------------------------------------------------
# Subprocess timings
# --------------------------------------------------------------------------


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
    return [sys.executable, "-c", "import sys; from cli.main import main; sys.exit(main())"], \
        f"{sys.executable} -c 'from cli.main import main'"


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


def print_table(ops: list[Op], modes: list[str], results: dict):
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


def totals(ops: list[Op], modes: list[str], results: dict) -> dict:
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


def targets(tot: dict, help_t: dict | None, sweep: dict | None, full: bool) -> list[dict]:
    rows = []

    def row(name, value, shown, ok):
        rows.append(dict(target=name, value=value, measured=shown,
                         status="n/a" if ok is None else ("PASS" if ok else "MISS")))

    sf, s, gg = tot.get("slow+fwd"), tot.get("slow"), tot.get("gradgrad")
    r = sf["ratio"] if sf else None
    row(f"slow+fwd: ours >= {TARGET_SLOWFWD_VS_TORCH_SLOWFWD:g}x faster than torch "
        "check_forward_ad=True", r, f"{_fmt_ratio(r)}x" if r else "not measured",
        None if r is None else r >= TARGET_SLOWFWD_VS_TORCH_SLOWFWD)
    r = _ratio(s["torch_s"], sf["ours_s"]) if (sf and s and sf["ops"] and s["ops"]) else None
    row("slow+fwd: ours not slower than torch plain slow mode", r,
        f"{_fmt_ratio(r)}x" if r else "not measured",
        None if r is None else r >= TARGET_SLOWFWD_VS_TORCH_SLOW)
    r = gg["ratio"] if gg else None
    row(f"gradgradcheck: ours >= {TARGET_GRADGRAD:g}x faster than torch", r,
        f"{_fmt_ratio(r)}x" if r else "not measured",
        None if r is None else r >= TARGET_GRADGRAD)
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
        t["subset"] = not full and t["target"].startswith(("slow", "gradgrad"))
    return rows


def print_targets(rows: list[dict]):
    print("\ntargets (measured in this run)")
    for t in rows:
        note = "  (on a subset of the ops)" if t["subset"] else ""
        print(f"  {t['status']:4}  {t['target']}: {t['measured']}{note}")


def problems(ops: list[Op], modes: list[str], results: dict) -> list[dict]:
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


def _load() -> list | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        return None


def _warn_load(load, when: str):
    cpus = os.cpu_count() or 1
    if load and load[0] > 0.75 * cpus:
        print(f"note: the machine is busy {when} (load average {load[0]:.1f} over 1 min on "
              f"{cpus} cpus): ours and torch's runs are interleaved, so the ratios stay "
              "comparable, but the absolute times are inflated")


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------


def select(ops: list[Op], patterns: list[str]) -> list[Op]:
    pats = [p for arg in patterns for p in arg.split(",") if p]
    if not pats:
        return ops
    return [op for op in ops if any(fnmatch.fnmatchcase(op.name, p) or op.family == p
                                    for p in pats)]


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="adcheck's gradcheck on refengine against torch.autograd.gradcheck, "
                    "interleaved in one process, on the same 49 ops and inputs.",
        epilog="Ratios are torch / ours (above 1: ours faster). Nothing asserts: the "
               "targets section says PASS or MISS.")
    parser.add_argument("--ops", action="append", default=[], metavar="PATTERN",
                        help="only ops whose name matches (shell wildcards, comma-separated, "
                             "repeatable) or of this family (unary, binary, reduction, linalg, "
                             "nn, complex)")
    parser.add_argument("--modes", default=",".join(MODES),
                        help=f"comma-separated, from {', '.join(MODES)} (default: all)")
    parser.add_argument("--repeat", type=int, default=5,
                        help="timed runs per side, interleaved; the median is kept (default 5)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the inputs (default 0)")
    parser.add_argument("--no-batch", action="store_true",
                        help="our side with batching off (gradcheck.set_batching(False))")
    parser.add_argument("--sweep", action="store_true",
                        help="also time `adcheck ops -q` over the whole registry")
    parser.add_argument("--sweep-args", default="",
                        help="extra arguments for the sweep, e.g. "
                             "'--check reverse,forward,gradgrad,reference,fast,fwgrad_bwgrad'")
    parser.add_argument("--sweep-timeout", type=float, default=3600.0,
                        help="seconds before the sweep is abandoned (default 3600)")
    parser.add_argument("--no-subprocess", action="store_true",
                        help="skip the import torch and adcheck --help timings")
    parser.add_argument("--torch-threads", type=int, default=1, metavar="N",
                        help="torch.set_num_threads(N); 0 keeps torch's default (one per core). "
                             "Default 1: these tensors are too small for a second thread to pay "
                             "off, and on a busy machine waits on torch's intra-op pool inflate "
                             "its times many fold")
    parser.add_argument("--json", metavar="PATH", help="write every number to PATH")
    parser.add_argument("--list", action="store_true", help="print the op list and exit")
    args = parser.parse_args(argv)

    modes = [m for m in args.modes.split(",") if m]
    bad = [m for m in modes if m not in MODES]
    if bad:
        parser.error(f"unknown mode {bad[0]!r}; choose from {', '.join(MODES)}")
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")

    all_ops = build_ops(args.seed)
    ops = select(all_ops, args.ops)
    if args.list:
        for op in ops:
            print(f"{op.name:17} {op.family:10} {op.describe()}")
        print(f"{len(ops)} ops")
        return 0
    if not ops:
        parser.error(f"no op matches {args.ops}; see --list")

    import torch
    import torch.autograd

    default_threads = torch.get_num_threads()
    if args.torch_threads > 0:
        torch.set_num_threads(args.torch_threads)

    batching = "default"
    if args.no_batch:
        set_batching = getattr(gradcheck, "set_batching", None)
        if set_batching is None:   # not exported yet: the module that holds it
            try:
                set_batching = importlib.import_module("gradcheck.batching").set_batching
            except (ImportError, AttributeError):
                set_batching = None
        if set_batching is None:
            batching = "unavailable"
            print("note: gradcheck.set_batching does not exist (yet); --no-batch has no "
                  "effect, our side runs as it is", file=sys.stderr)
        else:
            set_batching(False)
            batching = "off"

    sides = {
        "ours": (refengine, {"gradcheck": gradcheck.gradcheck,
                             "gradgradcheck": gradcheck.gradgradcheck}),
        "torch": (torch, {"gradcheck": torch.autograd.gradcheck,
                          "gradgradcheck": torch.autograd.gradgradcheck}),
    }
    missing = check_ops_exist(ops, (refengine, torch))

    env = dict(python=platform.python_version(), platform=platform.platform(),
               cpus=os.cpu_count(), torch=torch.__version__, torch_threads=torch.get_num_threads(),
               torch_default_threads=default_threads,
               numpy=np.__version__, refengine=getattr(refengine, "__version__", "?"),
               repeat=args.repeat, seed=args.seed, batching=batching, ops=len(ops),
               argv=sys.argv[1:], load_before=_load())
    print(f"adcheck vs torch.autograd: {len(ops)} ops, modes {', '.join(modes)}, "
          f"{args.repeat} interleaved repeats, median per side")
    _warn_load(env["load_before"], "before")
    print(f"python {env['python']}, torch {env['torch']} ({env['torch_threads']} threads), "
          f"numpy {env['numpy']}, {env['cpus']} cpus, batching: {batching}")
    if env["torch_threads"] != default_threads:
        print(f"torch runs on {env['torch_threads']} intra-op thread(s) instead of its default "
              f"{default_threads} (--torch-threads 0 keeps the default)")

    results = {m: {} for m in modes}
    tty = sys.stderr.isatty()
    started = time.perf_counter()
    for mode in modes:
        for i, op in enumerate(ops, 1):
            msg = f"[{mode} {i}/{len(ops)}] {op.name}"
            print(f"\r{msg:60}" if tty else msg, end="" if tty else "\n", file=sys.stderr,
                  flush=True)
            gc.collect()
            results[mode][op.name] = run_pair(op, mode, args.repeat, sides)
    if tty:
        print("\r" + " " * 60 + "\r", end="", file=sys.stderr)
    bench_s = time.perf_counter() - started
    env["load_after"] = _load()

    print_table(ops, modes, results)
    tot = totals(ops, modes, results)
    print_totals(tot, len(ops))

    import_t = help_t = sweep = None
    if not args.no_subprocess:
        import_t = time_import_torch()
        help_t = time_help()
    if args.sweep:
        sweep = time_sweep(args.sweep_args.split(), args.sweep_timeout)

    print("\nprocess timings")
    if import_t:
        print(f"  python -c 'import torch': best {import_t['best_s']:.2f} s, first "
              f"{import_t['first_s']:.2f} s, median {import_t['median_s']:.2f} s "
              f"(anchor {ANCHOR_IMPORT_TORCH_S:.2f} s)")
    if help_t:
        print(f"  {help_t['command']}: best {help_t['best_s']:.3f} s, median "
              f"{help_t['median_s']:.3f} s (exit status {help_t['exit_status']})")
        if "on_path" in help_t:
            print(f"  {help_t['on_path']} --help (as found on PATH): best "
                  f"{help_t['on_path_best_s']:.3f} s")
    if sweep:
        if sweep.get("seconds") is None:
            print(f"  {sweep['command']}: {sweep['note']}")
        else:
            print(f"  {sweep['command']}: {sweep['seconds']:.1f} s on {sweep['cpus']} cpus, "
                  f"exit status {sweep['exit_status']}: {sweep['summary']}")
            for line in sweep["failures"][:20]:
                print(f"    {line[:160]}")
            if len(sweep["failures"]) > 20:
                print(f"    ... {len(sweep['failures']) - 20} more")
    print(f"  this benchmark's check loop: {bench_s:.1f} s")

    _warn_load(env["load_after"], "after the check loop")
    full = len(ops) == len(all_ops)
    batch_info = batching_info(ops, modes) if batching == "default" else None
    print_batching(batch_info, batching)
    canaries = run_canaries(modes, sides, args.seed)
    print_canaries(canaries)
    tgt = targets(tot, help_t, sweep, full)
    print_targets(tgt)
    probs = problems(ops, modes, results)
    print_problems(probs, missing)

    if args.json:
        doc = dict(
            schema="adcheck-bench-vs-torch", schema_version=1, env=env,
            anchors=dict(ms=ANCHOR_MS, import_torch_s=ANCHOR_IMPORT_TORCH_S),
            ops=[dict(name=op.name, family=op.family, inputs=op.describe()) for op in ops],
            results={m: {n: {side: out.to_dict() for side, out in r.items()}
                         for n, r in results[m].items()} for m in modes},
            totals={m: dict(t, ours_ms=1e3 * t["ours_s"], torch_ms=1e3 * t["torch_s"],
                            ours_best_ms=1e3 * t["ours_best_s"],
                            torch_best_ms=1e3 * t["torch_best_s"])
                    for m, t in tot.items()},
            targets=tgt, import_torch=import_t, help=help_t, sweep=sweep,
            problems=probs, unevaluable=missing, canaries=canaries, batching_info=batch_info,
            bench_seconds=bench_s)
        Path(args.json).write_text(json.dumps(doc, indent=1))
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
