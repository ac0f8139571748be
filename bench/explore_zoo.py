"""Issue 30's zoo: derivative bugs that live at special points, each with its fix.

Every entry is a custom autograd Function (torch or refengine, the same code
on either) whose forward is computed stably and whose backward is either the
buggy formula or the fixed one. The bugs are of the kinds that shipped in
PyTorch, JAX and TensorFlow: NaN from 0/0 or 0 * log(0) at an exact zero,
gradients that add up to 2 at a tie (within an input and across inputs), a
product's gradient at a zero entry, an exp that overflows in the tail, a
term that underflows at |x| = 40, a threshold parameter crossed, a
cancellation that is 100 % off at 1e-8, a complex formula that is NaN at 0.
The ordinary inputs are what a user writes: ``randn``.

    python bench/explore_zoo.py [--engines torch,refengine] [--budget 20]

prints, per engine and entry, whether the default check and the explore mode
find the bug, whether the fixed formula passes both, and the seconds spent;
``bench/explore.md`` records a run.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT.parent) not in sys.path:
    sys.path.insert(0, str(ROOT.parent))


@dataclass
class Entry:
    """One bug class: ``forward(E, *xs)`` and the two backwards
    ``(E, g, *xs) -> grads``, and the ordinary inputs ``inputs(E, seed)``."""

    name: str
    kind: str
    forward: Callable
    buggy: Callable
    fixed: Callable
    inputs: Callable

    def function(self, E, which: str):
        """The custom Function's ``apply`` with the ``which`` backward."""
        forward, backward = self.forward, getattr(self, which)

        class Planted(E.autograd.Function):
            @staticmethod
            def forward(ctx, *xs):
                ctx.save_for_backward(*xs)
                return forward(E, *xs)

            @staticmethod
            def backward(ctx, g):
                grads = backward(E, g, *ctx.saved_tensors)
                return grads if isinstance(grads, tuple) else grads

        Planted.__name__ = f"{self.name}_{which}"
        return Planted.apply


def _randn(E, seed, *shape, dtype="float64"):
    import numpy as np
    values = np.random.default_rng(seed).standard_normal(shape)
    if dtype == "complex128":
        values = values + 1j * np.random.default_rng(seed + 1).standard_normal(shape)
    return E.tensor(values.tolist() if dtype != "complex128" else values,
                    dtype=getattr(E, dtype), requires_grad=True)


def _safe(E, x, where, value=1.0):
    """``x`` with the entries ``where`` holds replaced by ``value`` (the
    double-where idiom: a branch never evaluated at the bad point)."""
    return E.where(where, E.full_like(x, value), x)


def _sinc_fixed(E, g, x):
    # below 1e-3 the series (-x/3 + x^3/30): the quotients cancel, and overflow at 1e-300
    small = E.abs(x) < 1e-3
    s = _safe(E, x, small)
    return g * E.where(small, -x / 3 + x ** 3 / 30, E.cos(s) / s - E.sin(s) / (s * s))


def _xlogx_fixed(E, g, x):
    s = _safe(E, x, x == 0)
    return g * E.where(x == 0, E.zeros_like(x), 2 * s * E.log(E.abs(s)) + s)


def _max_fixed(E, g, x):
    mask = (x == E.max(x)).to(x.dtype)
    return g * mask / mask.sum()


def _maximum_grads(E, g, a, b, split):
    tie = (a == b).to(a.dtype)
    return (g * ((a > b).to(a.dtype) + split * tie), g * ((b > a).to(a.dtype) + split * tie))


def _prod_fixed(E, g, x):
    flat = x.reshape(-1)
    others = [E.prod(E.where(E.arange(flat.shape[0]) == k, E.ones_like(flat), flat))
              for k in range(flat.shape[0])]
    return g * E.stack(others).reshape(x.shape)


def _softplus_forward(E, x):
    return E.where(x > 0, x + E.log1p(E.exp(-E.abs(x))), E.log1p(E.exp(-E.abs(x))))


def _gauss_forward(E, x):
    return -x * x + E.log1p(E.exp(-x * x))


def _gauss_buggy(E, g, x):
    a, b = E.exp(-x * x), E.exp(-2 * x * x)
    return g * (-2 * x * a - 4 * x * b) / (a + b)


def _gauss_fixed(E, g, x):
    a = E.exp(-x * x)
    return g * (-2 * x - 2 * x * a / (1 + a))


def _shx_forward(E, x):
    small = E.abs(x) < 1e-3
    s = _safe(E, x, small)
    return E.where(small, x ** 3 / 6 + x ** 5 / 120, E.sinh(s) - s)


ZOO = [
    Entry("sinc", "exact zero: 0/0", lambda E, x: E.where(x == 0, E.ones_like(x),
                                                            E.sin(x) / _safe(E, x, x == 0)),
          lambda E, g, x: g * (E.cos(x) / x - E.sin(x) / (x * x)), _sinc_fixed,
          lambda E, s: (_randn(E, s, 4),)),
    Entry("x2logx", "exact zero: 0 * log(0)",
          lambda E, x: E.where(x == 0, E.zeros_like(x),
                               x * x * E.log(E.abs(_safe(E, x, x == 0)))),
          lambda E, g, x: g * (2 * x * E.log(E.abs(x)) + x), _xlogx_fixed,
          lambda E, s: (_randn(E, s, 4),)),
    Entry("max", "tie within an input", lambda E, x: E.max(x),
          lambda E, g, x: g * (x == E.max(x)).to(x.dtype), _max_fixed,
          lambda E, s: (_randn(E, s, 5),)),
    Entry("maximum", "tie across inputs", lambda E, a, b: E.maximum(a, b),
          lambda E, g, a, b: _maximum_grads(E, g, a, b, 1.0),
          lambda E, g, a, b: _maximum_grads(E, g, a, b, 0.5),
          lambda E, s: (_randn(E, s, 3), _randn(E, s + 7, 3))),
    Entry("prod", "zero entry of a product", lambda E, x: E.prod(x),
          lambda E, g, x: g * E.prod(x) / x, _prod_fixed,
          lambda E, s: (_randn(E, s, 4),)),
    Entry("softplus", "tail: exp overflows", _softplus_forward,
          lambda E, g, x: g * E.exp(x) / (1 + E.exp(x)), lambda E, g, x: g * E.sigmoid(x),
          lambda E, s: (_randn(E, s, 4),)),
    Entry("gauss_tail", "tail: underflow at |x| = 40", _gauss_forward, _gauss_buggy,
          _gauss_fixed, lambda E, s: (_randn(E, s, 4),)),
    Entry("threshold", "threshold parameter crossed",
          lambda E, x: E.where(x > 20, x, E.log1p(E.exp(E.where(x > 20, E.zeros_like(x), x)))),
          lambda E, g, x: g * E.where(x > 20, E.zeros_like(x), E.sigmoid(x)),
          lambda E, g, x: g * E.where(x > 20, E.ones_like(x), E.sigmoid(x)),
          lambda E, s: (_randn(E, s, 4),)),
    Entry("sinh_minus_x", "cancellation at tiny magnitudes", _shx_forward,
          lambda E, g, x: g * (E.cosh(x) - 1), lambda E, g, x: g * 2 * E.sinh(x / 2) ** 2,
          lambda E, s: (_randn(E, s, 4),)),
    Entry("abs2", "complex: NaN at 0", lambda E, z: E.real(z * E.conj(z)),
          lambda E, g, z: g * 2 * E.abs(z) * (z / E.abs(z)), lambda E, g, z: g * 2 * z,
          lambda E, s: (_randn(E, s, 3, dtype="complex128"),)),
]


def engine(name: str):
    if name == "torch":
        import torch
        return torch
    from adcheck import refengine
    return refengine


def _torch_gradcheck(func, inputs) -> bool:
    """torch.autograd.gradcheck's verdict at the same ordinary inputs."""
    import torch
    try:
        return bool(torch.autograd.gradcheck(func, inputs, raise_exception=False))
    except Exception:    # a NaN it raises on, for one: found
        return False


#: the verdicts ``measure`` takes of each function
KINDS = ("alone", "default", "quick", "explore")


def measure(entry: Entry, E, budget: float, seed: int = 0) -> dict:
    """Found without exploring (``explore=False``), by ``check()``'s default (the
    quick pass, torch's tolerances), by the command line's default (the quick
    pass, precise) and by exploring (precise, as ``--explore``); false alarms on
    the fix; seconds."""
    from adcheck.gradcheck import check
    out = {}
    for which in ("buggy", "fixed"):
        func = entry.function(E, which)
        alone = check(func, entry.inputs(E, seed), seed=seed, explore=False)
        plain = check(func, entry.inputs(E, seed), seed=seed)
        quick = check(func, entry.inputs(E, seed), seed=seed, precise=True)
        start = time.perf_counter()
        explored = check(func, entry.inputs(E, seed), seed=seed, precise=True, explore=True,
                         explore_budget=budget)
        out[which] = {"alone": alone.passed, "default": plain.passed, "quick": quick.passed,
                      "explore": explored.passed,
                      "torch": _torch_gradcheck(func, entry.inputs(E, seed)) if E.__name__ ==
                      "torch" else None,
                      "seconds": time.perf_counter() - start,
                      "tried": explored.counts["explore"]["tried"],
                      "point": next((f["point"] for f in explored.counts["explore"]["findings"]),
                                    None)}
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default="torch,refengine")
    parser.add_argument("--budget", type=float, default=20.0)
    parser.add_argument("--only", default=None, help="comma-separated entry names")
    args = parser.parse_args(argv)
    for name in args.engines.split(","):
        E = engine(name)
        found = [0, 0, 0, 0, 0]
        alarms = 0
        entries = [e for e in ZOO if args.only is None or e.name in args.only.split(",")]
        for entry in entries:
            m = measure(entry, E, args.budget)
            b, f = m["buggy"], m["fixed"]
            found[0] += not b["default"]
            found[1] += not b["explore"]
            found[2] += b["torch"] is False
            found[3] += not b["alone"]
            found[4] += not b["quick"]
            alarms += sum(not f[k] for k in KINDS)
            print(f"{name:9} {entry.name:13} no explore "
                  f"{'found' if not b['alone'] else 'missed':6} check() "
                  f"{'found' if not b['default'] else 'missed':6} quick precise "
                  f"{'found' if not b['quick'] else 'missed':6} explore "
                  f"{'found' if not b['explore'] else 'missed':6} "
                  f"({b['seconds']:5.1f} s, {b['tried']:3} points) fixed "
                  f"{'pass' if all(f[k] for k in KINDS) else 'FALSE ALARM':11} "
                  f"({f['seconds']:5.1f} s, {f['tried']:4} points)  {b['point'] or ''}",
                  flush=True)
        torch_text = (f", torch.autograd.gradcheck finds {found[2]}/{len(entries)}"
                      if name == "torch" else "")
        print(f"{name}: explore=False finds {found[3]}/{len(entries)}, check()'s default "
              f"(quick pass, torch's tolerances) {found[0]}/{len(entries)}, the command line's "
              f"(quick pass, precise) {found[4]}/{len(entries)}, explore finds "
              f"{found[1]}/{len(entries)}{torch_text}, false alarms on the fixed ones: "
              f"{alarms}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
