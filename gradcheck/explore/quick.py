"""The quick pass's screen: a few evaluations that clear most special points.

A point of the quick tier (exact zeros, ties, two magnitudes) is first
screened: one AD product per mode the check asks for (a vjp with a random
cotangent ``v``; a jvp) and the two one-sided difference quotients of ``v .
f`` along a direction ``u`` with positive entries (a tie whose gradients add
up to 2 leaves the bracket of a direction that moves the tied entries together). The formula's ``v . J u`` must be finite and lie
between the one-sided quotients (the bracket of ``brackets``, which holds at
kinks and ties too). A point that passes is counted as passed; one that does
not is judged in full (the precise check and the one-sided verdicts), so the
screen never fails a formula by itself: it only decides which points get the
full judgement. What it may miss is an error diluted in the projections (one
entry of many off by less than ``SCREEN_RTOL`` of the whole); the full
explore mode checks every entry.
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.core.coords import from_real, to_real
from adcheck.gradcheck.core.problem import as_tuple
from adcheck.gradcheck.explore.brackets import fd_step

#: the relative tolerance of a screened projection (a failing one goes to the full check)
SCREEN_RTOL = 1e-3


class _Point:
    """The function at one point, called directly on the engine (no checked
    problem is built: the screen makes four calls, the least it can)."""

    def __init__(self, E, func, ins: list, explored: list):
        self.E, self.func, self.ins = E, func, ins
        with E.enable_grad():
            outs = as_tuple(func(*ins))
        self.outs = {k: o for k, o in enumerate(outs)
                     if E.is_tensor(o) and E.is_differentiable_dtype(o)}
        self.base = {k: E.to_numpy(o) for k, o in self.outs.items()}
        self.arrays = {i: E.to_numpy(ins[i]) for i in explored}

    def vjp_row(self, v: dict) -> dict:
        """``v^T J`` in the real coordinates of each explored input."""
        E, keys = self.E, list(v)
        cotangents = [E.from_numpy_like(from_real(v[k], self.base[k].shape, self.base[k].dtype),
                                        self.outs[k]) for k in keys]
        grads = E.grad([self.outs[k] for k in keys], [self.ins[i] for i in self.arrays],
                       cotangents)
        return {i: np.zeros(to_real(a).size) if g is None else to_real(E.to_numpy(g))
                for (i, a), g in zip(self.arrays.items(), grads)}

    def jvp(self, u: dict) -> dict:
        """``J u`` in the real coordinates of each output."""
        E = self.E
        with E.dual_level():
            args = list(self.ins)
            for i, d in u.items():
                a = self.arrays[i]
                args[i] = E.make_dual(args[i], E.from_numpy_like(from_real(d, a.shape, a.dtype),
                                                                 args[i]))
            outs = as_tuple(self.func(*args))
            tangents = {k: E.tangent(outs[k]) for k in self.outs}
        return {k: None if t is None else to_real(E.to_numpy(t)) for k, t in tangents.items()}

    def moved(self, u: dict, step: float) -> dict | None:
        """The outputs at the point moved ``step`` along ``u``; None where the
        function raises there."""
        E, ins = self.E, list(self.ins)
        for i, d in u.items():
            a = self.arrays[i]
            ins[i] = E.from_numpy_like(a + step * from_real(d, a.shape, a.dtype), self.ins[i])
        try:
            with E.no_grad():
                outs = as_tuple(self.func(*ins))
        except Exception:    # outside the domain beside the point: no quotient
            return None
        return {k: to_real(E.to_numpy(outs[k])) for k in self.outs}


def _formulas(point: _Point, v: dict, u: dict, modes) -> list:
    """``v . J u`` by each mode asked for."""
    values = []
    with np.errstate(all="ignore"):
        if "reverse" in modes:
            rows = point.vjp_row(v)
            values.append(sum(float(rows[i] @ u[i]) for i in u))
        if "forward" in modes:
            t = point.jvp(u)
            values.append(sum(0.0 if t[k] is None else float(v[k] @ t[k]) for k in v))
    return values


def _quotient(point: _Point, v: dict, u: dict, step: float):
    outs = point.moved(u, step)
    if outs is None:
        return None
    with np.errstate(all="ignore"):
        return sum(float(v[k] @ (outs[k] - to_real(point.base[k]))) for k in v) / step


def screen(E, func, ins: list, explored: list, modes, rng, eps: float) -> str:
    """``"pass"``, ``"domain"`` (the forward is not finite there), ``"nondiff"``
    (the function jumps along the direction, or the formula is NaN where the
    one-sided quotients differ or do not form) or ``"judge"`` (the point needs
    the full judgement; see the module docstring); ``eps``: the rounding unit
    of the inputs' and outputs' dtypes."""
    try:
        point = _Point(E, func, ins, explored)
    except Exception:    # the forward raises: outside the domain
        return "domain"
    if not all(np.all(np.isfinite(b)) for b in point.base.values()):
        return "domain"
    keys = [k for k, o in point.outs.items() if E.requires_grad(o)]
    return "judge" if not keys or not point.arrays else _screened(point, keys, modes, rng, eps)


def _screened(point: _Point, keys: list, modes, rng, eps: float) -> str:
    v = {k: rng.standard_normal(to_real(point.base[k]).size) for k in keys}
    u = {i: rng.uniform(0.5, 1.5, to_real(a).size) for i, a in point.arrays.items()}
    peak = max(float(np.max(np.abs(to_real(a)), initial=0.0)) for a in point.arrays.values())
    step = fd_step(peak, eps)
    formulas = _formulas(point, v, u, modes)
    sides = [_quotient(point, v, u, sign * step) for sign in (-1.0, 1.0)]
    bracketed = all(q is not None and np.isfinite(q) for q in sides)
    scale = sum(float(np.abs(v[k]) @ np.abs(to_real(point.base[k]))) for k in keys)

    def tol(*values):
        reach = max(abs(x) for x in values)
        return SCREEN_RTOL * reach + 64 * eps * (scale + peak * reach) / step
    finite = all(np.isfinite(f) for f in formulas)
    if finite and not bracketed:
        return "pass"    # an edge of the domain or a pole beside it: no bracket to screen
    if finite and all(min(sides) - tol(*sides, f) <= f <= max(sides) + tol(*sides, f)
                      for f in formulas):
        return "pass"
    halves = [_quotient(point, v, u, sign * step / 2) for sign in (-1.0, 1.0)]
    if not finite:
        # NaN or inf: a failure only where the function is differentiable (as
        # ``brackets``): the sides, extrapolated from both steps, must agree
        if not bracketed or any(h is None or not np.isfinite(h) for h in halves):
            return "nondiff"
        ends = [2 * h - q for q, h in zip(sides, halves)]
        spread = sum(abs(h - q) for q, h in zip(sides, halves))
        return "nondiff" if abs(ends[1] - ends[0]) > spread + tol(*ends) else "judge"
    for q, half in zip(sides, halves):
        # a jump: the quotient grows like 1 / step (sign at 0, eigenvectors at a
        # repeated eigenvalue): not differentiable, no full check needed to say so
        if half is not None and abs(half) > 1.5 * abs(q) and abs(half - q) > tol(q, half):
            return "nondiff"
    return "judge"
