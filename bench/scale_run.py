"""One run of the scale benchmark, in a process of its own (``bench/scale.py`` starts it).

    python bench/scale_run.py FUNCTION MODE N

prints one JSON line: ``seconds`` (wall time of the check alone),
``cpu_seconds`` (the process's CPU time during it), ``peak_mb``
(the process's peak resident set, ``ru_maxrss``, minus its resident set just
before the check, after the imports, the inputs and a warm-up check of the
same mode at a tiny size, so that lazily imported modules count as baseline),
``baseline_mb``, ``verdict`` (``passed``, ``failed`` or ``error: ...``) and,
for adcheck, ``plan`` and ``counts``.

FUNCTION: sin, softmax (rows of 64), cumsum (one dimension: a dense lower
triangular Jacobian), matmul (two square operands), conv2d (a 3-channel
square image and a (4, 3, 3, 3) kernel, padding 1, both differentiated),
layer_norm (rows of 64). ``N`` is the number of inputs wanted; the shapes come
as close as they can (``shapes``).

MODE: ``torch-slow`` and ``torch-fast`` (``torch.autograd.gradcheck``,
``fast_mode`` off and on), ``gradcheck``, ``precise``, ``fast``,
``compressed``, ``probed`` (adcheck on torch functions), and
``precise-refengine`` (the same function written with refengine).
Every check has ``check_forward_ad=True``; torch and NumPy's BLAS run on one
thread. A
planted error: ``precise+planted`` (``sin`` and ``softmax`` only) checks a
custom Function whose vjp is off by a relative 1e-6 in one diagonal entry
(forward mode is then not checked: the Function has no jvp).
"""
from __future__ import annotations

import json
import math
import os
import resource
import sys
import time
from pathlib import Path

# NumPy's BLAS on one thread, as torch is (set before NumPy loads it): on a
# loaded machine OpenBLAS's threads wait for each other at every small gemm,
# and refengine's vmapped conv2d weight vjp (a stack of 28 products of
# (4, 5,329) by (5,329, 27)) took 5 s instead of 3 ms at 16,384 inputs
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ROW = 64


def shapes(name: str, n: int) -> list:
    """The input shapes of ``name`` with about ``n`` inputs in all."""
    if name in ("sin", "cumsum"):
        return [(n,)]
    if name in ("softmax", "layer_norm"):
        return [(max(1, round(n / ROW)), ROW)]
    if name == "matmul":
        side = max(2, round(math.sqrt(n / 2)))
        return [(side, side), (side, side)]
    side = max(3, round(math.sqrt(max(n - 108, 27) / 3)))
    return [(1, 3, side, side), (4, 3, 3, 3)]


def function(name: str, E):
    """``name`` written with the engine module ``E`` (torch or refengine)."""
    F = E.nn.functional
    return {"sin": lambda x: E.sin(x), "softmax": lambda x: F.softmax(x, dim=-1),
            "cumsum": lambda x: E.cumsum(x, 0), "matmul": lambda a, b: E.matmul(a, b),
            "conv2d": lambda x, w: F.conv2d(x, w, padding=1),
            "layer_norm": lambda x: F.layer_norm(x, (ROW,))}[name]


def inputs(name: str, n: int, E) -> tuple:
    rng = np.random.default_rng(0)
    arrays = [rng.uniform(-1.5, 1.5, shape) for shape in shapes(name, n)]
    return tuple(E.from_numpy(a).requires_grad_() for a in arrays)


def planted(name: str, n: int, E):
    """``sin`` or ``softmax`` as a custom Function written as a hand-written
    kernel would be, whose vjp is off by a relative 1e-6 in one diagonal entry
    (output and input coordinate ``k``, the middle one). It can be vmapped
    (``setup_context``, ``generate_vmap_rule``), as a torch Function should."""
    k = n // 2
    mask = np.zeros(n)
    mask[k] = 1e-6
    mask = E.from_numpy(mask.reshape(shapes(name, n)[0]))

    class Planted(E.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return E.sin(x) if name == "sin" else E.nn.functional.softmax(x, dim=-1)

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0], output)

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            if name == "sin":
                return g * E.cos(x) * (1 + mask)
            right = y * (g - (g * y).sum(-1, keepdim=True))
            return right + mask * g * y * (1 - y)    # J[k, k] = y_k (1 - y_k)
    return Planted.apply


def run_check(name: str, mode: str, n: int) -> dict:
    base, _, plant = mode.partition("+")
    on_refengine = base.endswith("refengine")
    import torch
    torch.set_num_threads(1)
    if on_refengine:
        import adcheck.refengine as E
    else:
        E = torch
    f = planted(name, n, E) if plant else function(name, E)
    call = _caller(base, E, forward=not plant)
    small = 64 if name != "conv2d" else 40
    call(planted(name, small, E) if plant else f, inputs(name, small, E))  # warm up: imports
    xs = inputs(name, n, E)
    before = _rss_mb()
    start, cpu = time.perf_counter(), time.process_time()
    try:
        outcome = call(f, xs)
    except Exception as exc:  # noqa: BLE001 - a check that raises is a verdict too
        outcome = {"verdict": f"error: {type(exc).__name__}: {str(exc)[:300]}"}
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return dict(outcome, seconds=seconds, cpu_seconds=cpu, peak_mb=max(0.0, peak - before), baseline_mb=before,
                inputs=sum(x.numel() for x in xs))


def _caller(mode: str, E, forward: bool = True):
    from adcheck import gradcheck
    import torch

    def torch_check(f, xs, fast):
        ok = torch.autograd.gradcheck(f, xs, check_forward_ad=forward, fast_mode=fast,
                                      raise_exception=False)
        return {"verdict": "passed" if ok else "failed"}

    def ours(f, xs, **keywords):
        report = gradcheck.check(f, xs, check_forward_ad=forward, seed=0, **keywords)
        found = {"verdict": "passed" if report.passed else "failed", "plan": report.plan,
                 "counts": report.counts}
        if not report.passed:
            found["message"] = report.message().splitlines()[0][:400]
        if report.escape:
            found["escape"] = report.escape
        return found
    return {"torch-slow": lambda f, xs: torch_check(f, xs, False),
            "torch-fast": lambda f, xs: torch_check(f, xs, True),
            "gradcheck": lambda f, xs: ours(f, xs),
            "precise": lambda f, xs: ours(f, xs, precise=True),
            "fast": lambda f, xs: ours(f, xs, fast_mode=True),
            "compressed": lambda f, xs: ours(f, xs, precise=True, jacobian="compressed"),
            "probed": lambda f, xs: ours(f, xs, precise=True, jacobian="probed", probes=4),
            "precise-refengine": lambda f, xs: ours(f, xs, precise=True)}[mode]


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


if __name__ == "__main__":
    print(json.dumps(run_check(sys.argv[1], sys.argv[2], int(sys.argv[3]))))
