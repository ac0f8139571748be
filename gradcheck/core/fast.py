"""Fast mode: random projections ``v^T J u`` instead of whole Jacobians.

For each input ``i`` a random unit vector ``u_i`` and for each output ``o`` a
random unit vector ``v_o`` are drawn (signed Gaussian directions in real
coordinates, new ones on every run unless a seed is given). Then, per pair:

- numerical: ``v_o . (f(x + eps u_i) - f(x - eps u_i)) / (2 eps)``,
  two function calls per input;
- reverse: ``(J^T v_o) . u_i``, one vjp per output;
- forward: ``v_o . (J u_i)``, one jvp per input.

The analytical scalar ``a`` passes against the numerical ``n`` when
``|a - n| <= atol + rtol * ||v_o * J_num u_i||_2`` (elementwise product):
if every entry of the directional derivative had an error at the slow
tolerance ``atol + rtol * |J_num u|``, a signed random ``v_o`` of unit norm
would project it to about this size. There is no inflation by
``sum(u) * sum(v)``; finite-difference errors of a correct formula are far
below the tolerances, so this does not raise false alarms.

How likely a bug escapes one probe: let ``E`` be the error of the analytical
block (``m`` output and ``n`` input real coordinates), ``tau`` the tolerance
and ``t = tau * sqrt(m * n) / |E|_F``. If ``E`` is spread over many entries,
``v^T E u`` is close to a Gaussian of standard deviation ``|E|_F / sqrt(m n)``
and one probe misses the bug with probability ``erf(t / sqrt 2)``, at most
``0.80 t`` (``t = 0.1``: 8 %; ``t = 0.01``: 0.8 %). If ``E`` is a single
entry, ``v^T E u`` behaves like ``|E|_F / sqrt(m n)`` times a product of two
independent standard Gaussians, and one probe misses it with probability
``(2/pi) * integral_0^t K0`` (``t = 0.1``: 22 %; ``t = 0.01``: 3.6 %;
``t = 0.001``: 0.5 %). ``k`` independent probes miss with the ``k``-th power
of these. A relative error ``r`` in a Jacobian of unit entries has
``t ~ (atol + rtol) / r``: fast mode, like slow mode, sees only errors
larger than its tolerances.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from adcheck.gradcheck.core import coords
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.jacobian import Jacobian, projection_layout
from adcheck.gradcheck.core.problem import Problem
from adcheck.gradcheck.core.sides import Side


@dataclass
class Probes:
    """``k`` probe directions: ``u[in_idx]`` and ``v[out_idx]``, each (k, size)."""

    u: dict
    v: dict

    @property
    def k(self) -> int:
        return next(iter(self.u.values())).shape[0]

    def along(self, side: Side) -> tuple:
        """``(on the carriers, on the receivers)`` of ``side``: ``(v, u)`` in
        reverse mode, ``(u, v)`` in forward mode."""
        return (self.v, self.u) if side.carrier == "output" else (self.u, self.v)


def _unit_rows(rng, k, size):
    """``k`` signed random unit directions of ``size`` real coordinates."""
    return _normalized(rng.standard_normal((k, size)))


def _normalized(rows):
    if len(rows) == 1:   # (one probe, the default: a dot product, a third of the time)
        norm = math.sqrt(rows[0] @ rows[0])
        return rows / norm if norm else rows.copy()
    norms = np.sqrt(np.add.reduce(rows * rows, axis=1, keepdims=True))   # (np.linalg.norm's)
    norms[norms == 0] = 1.0   # (a zero row stays zero; np.where with 1 costs twice this)
    return rows / norms


def draw_probes(problem: Problem, rng: np.random.Generator, k: int = 1,
                layout=None) -> Probes:
    """Signed random unit directions for every input and every float output,
    sized by ``layout`` (default the problem's): ``k`` rows for each, drawn
    in that order (one draw of them all gives the same numbers)."""
    layout = layout or problem.layout
    sizes = [layout.in_size(i) for i in problem.diff_in] + \
        [layout.out_size(o) for o in problem.float_out]
    draws, start, rows = rng.standard_normal(k * sum(sizes)), 0, []
    for size in sizes:
        rows.append(_normalized(draws[start:start + k * size].reshape(k, size)))
        start += k * size
    n = len(problem.diff_in)
    return Probes(dict(zip(problem.diff_in, rows[:n])), dict(zip(problem.float_out, rows[n:])))


def _directional(ev: Evaluator, in_idx: int, direction: np.ndarray, step: float,
                 real_base: np.ndarray, base: np.ndarray) -> dict:
    """Outputs (by ``out_idx``, as the evaluation gives them) at ``input + step *
    direction`` (real); ``real_base``: the real coordinates of ``base``, the input."""
    moved = coords.from_real(real_base + step * direction, base.shape, base.dtype)
    return ev.evaluate({in_idx: moved}, "computing a directional finite difference")


def fast_numerical(ev: Evaluator, probes: Probes, eps: float):
    """Numerical projections and the tolerance scale ``||v * J_num u||_2``."""
    p = ev.problem
    start, before = time.perf_counter(), p.counts["function"]
    jac = Jacobian("numerical", projection_layout(p.layout))
    scale, k_rows, outs = {}, probes.k, p.float_out
    for in_idx in p.diff_in:
        blocks = [np.zeros((k_rows, 1)) for _ in outs]
        scales = [np.zeros((k_rows, 1)) for _ in outs]
        base = p.arrays[in_idx]
        real_base = coords.real_view(base)   # (once for both steps; only read)
        gaps = ev.memo.setdefault(MIDPOINT_GAPS, {})
        for k, direction in enumerate(probes.u[in_idx]):
            plus = _directional(ev, in_idx, direction, eps, real_base, base)
            minus = _directional(ev, in_idx, direction, -eps, real_base, base)
            gaps[in_idx] = max(gaps.get(in_idx, 0.0), _midpoint_gap(p, plus, minus))
            for o, block, scaled in zip(outs, blocks, scales):
                # (the evaluations' own arrays, read in place: they hold the outputs' copies)
                ju = (coords.real_view(plus[o]) - coords.real_view(minus[o])) / (2 * eps)
                v = probes.v[o][k]
                block[k, 0] = v @ ju
                scaled[k, 0] = coords.norm(v * ju)
        for o, block, scaled in zip(outs, blocks, scales):
            jac.blocks[o, in_idx], scale[o, in_idx] = block, scaled
    jac.counts = {"function": p.counts["function"] - before}
    jac.seconds = time.perf_counter() - start
    return jac, scale


def fast_projections(ev: Evaluator, side: Side, probes: Probes):
    """``side``'s projections ``v^T J u`` and the products themselves: ``J^T v``
    (reverse) or ``J u`` (forward), each (k, receiver real size), by pair."""
    p = ev.problem
    start, before = time.perf_counter(), p.counts[side.product]
    jac = Jacobian(f"fast-{side.mode}", projection_layout(p.layout))
    carried, received = probes.along(side)
    products, k_rows = {}, probes.k
    for idx in side.carriers(p):
        results = side.products(ev, idx, side.vectors(p, idx, carried[idx]), "fast mode")
        for r in side.receivers(p):
            key = side.key(idx, r)
            rows = products[key] = side.real_rows(p, r, results[r], k_rows)
            jac.blocks[key] = np.array([[rows[k] @ received[r][k]] for k in range(k_rows)])
    jac.counts = {side.product: p.counts[side.product] - before}
    jac.seconds = time.perf_counter() - start
    return jac, products


#: ``ev.memo``'s key of each input's midpoint gap (``_midpoint_gap``), by input
MIDPOINT_GAPS = "midpoint gaps"


def _midpoint_gap(p: Problem, plus: dict, minus: dict) -> float:
    """How far the mean of a central difference's two sides is from the value at
    the given inputs, relative to the largest value of the output, the worst
    output's (``inf`` where a value is not finite): about ``eps**2`` of the
    curvature where the function is continuous, and the jump where the value at
    the point is not its limit (``verdict.pointvalue`` looks closer only there)."""
    worst = 0.0
    for o in p.float_out:
        centre = coords.real_view(p.out_arrays[o])
        a, b = coords.real_view(plus[o]), coords.real_view(minus[o])
        scale = max(np.abs(centre).max(initial=0.0), np.abs(a).max(initial=0.0),
                    np.abs(b).max(initial=0.0))
        gap = np.abs((a + b) / 2 - centre).max(initial=0.0)
        if not (np.isfinite(gap) and np.isfinite(scale)):
            return math.inf
        worst = max(worst, gap / scale if gap else 0.0)
    return float(worst)
