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

import time
from dataclasses import dataclass

import numpy as np

from gradcheck import coords
from gradcheck.forward import tangents_to_real
from gradcheck.jacobian import Jacobian, Layout
from gradcheck.numerical import directional
from gradcheck.problem import Problem
from gradcheck.reverse import grads_to_real


@dataclass
class Probes:
    """``k`` probe directions: ``u[in_idx]`` and ``v[out_idx]``, each (k, size)."""

    u: dict
    v: dict

    @property
    def k(self) -> int:
        return next(iter(self.u.values())).shape[0]


def _unit_rows(rng, k, size):
    rows = rng.standard_normal((k, size))
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms == 0, 1, norms)


def draw_probes(problem: Problem, rng: np.random.Generator, k: int = 1) -> Probes:
    """Signed random unit directions for every input and every float output."""
    u = {i: _unit_rows(rng, k, problem.layout.in_size(i)) for i in problem.diff_in}
    v = {o: _unit_rows(rng, k, problem.layout.out_size(o)) for o in problem.float_out}
    return Probes(u, v)


def projection_layout(layout: Layout) -> Layout:
    """All-real layout: fast blocks are (k, 1) columns of scalars."""
    ins = {i: (1,) for i in layout.in_shapes}
    outs = {o: (1,) for o in layout.out_shapes}
    return Layout(ins, {i: False for i in ins}, outs, {o: False for o in outs})


def fast_numerical(problem: Problem, probes: Probes, eps: float):
    """Numerical projections and the tolerance scale ``||v * J_num u||_2``."""
    start, before = time.perf_counter(), problem.counts["function"]
    jac = Jacobian("numerical", projection_layout(problem.layout))
    scale = {}
    for in_idx in problem.diff_in:
        for p in range(probes.k):
            direction = probes.u[in_idx][p]
            plus = directional(problem, {in_idx: direction}, eps)
            minus = directional(problem, {in_idx: direction}, -eps)
            for o in problem.float_out:
                ju = (plus[o] - minus[o]) / (2 * eps)
                jac.blocks.setdefault((o, in_idx), np.zeros((probes.k, 1)))[p, 0] = probes.v[o][p] @ ju
                scale.setdefault((o, in_idx), np.zeros((probes.k, 1)))[p, 0] = np.linalg.norm(probes.v[o][p] * ju)
    jac.counts = {"function": problem.counts["function"] - before}
    jac.seconds = time.perf_counter() - start
    return jac, scale


def fast_reverse(problem: Problem, probes: Probes):
    """Reverse projections ``(J^T v) . u`` and the vectors ``J^T v``."""
    start, before = time.perf_counter(), problem.counts["vjp"]
    jac = Jacobian("fast-reverse", projection_layout(problem.layout))
    jtv = {}
    for out_idx in problem.diff_out:
        base = problem.out_arrays[out_idx]
        gos = coords.from_real_rows(probes.v[out_idx], base.shape, base.dtype)
        batch = problem.with_extra("vjp", out_idx, gos, "fast mode")
        for p in range(probes.k):
            if batch is None:
                grads = grads_to_real(problem, problem.vjp({out_idx: gos[p]}, "fast mode"))
            else:
                grads = grads_to_real(problem, {i: None if g is None else g[p]
                                                for i, g in batch.items()})
            for in_idx, g in grads.items():
                jac.blocks.setdefault((out_idx, in_idx), np.zeros((probes.k, 1)))[p, 0] = g @ probes.u[in_idx][p]
                jtv.setdefault((out_idx, in_idx), np.zeros((probes.k, g.size)))[p] = g
    jac.counts = {"vjp": problem.counts["vjp"] - before}
    jac.seconds = time.perf_counter() - start
    return jac, jtv


def fast_forward(problem: Problem, probes: Probes):
    """Forward projections ``v . (J u)`` and the vectors ``J u``."""
    start, before = time.perf_counter(), problem.counts["jvp"]
    jac = Jacobian("fast-forward", projection_layout(problem.layout))
    ju_all = {}
    for in_idx in problem.diff_in:
        base = problem.arrays[in_idx]
        tangents = coords.from_real_rows(probes.u[in_idx], base.shape, base.dtype)
        batch = problem.with_extra("jvp", in_idx, tangents, "fast mode")
        for p in range(probes.k):
            if batch is None:
                outs = tangents_to_real(problem, problem.jvp({in_idx: tangents[p]}, "fast mode"))
            else:
                outs = tangents_to_real(problem, {o: t[p] for o, t in batch.items()})
            for o in problem.diff_out:
                jac.blocks.setdefault((o, in_idx), np.zeros((probes.k, 1)))[p, 0] = probes.v[o][p] @ outs[o]
                ju_all.setdefault((o, in_idx), np.zeros((probes.k, outs[o].size)))[p] = outs[o]
    jac.counts = {"jvp": problem.counts["jvp"] - before}
    jac.seconds = time.perf_counter() - start
    return jac, ju_all
