"""The points beside an explored point: the pieces around a kink or a tie.

A one-sided verdict (``brackets``) widens each bracket by central quotients
taken beside the point (``quotients_beside``): a few fixed ways that move
every entry (``nearby``), the way the formula's own rows claim
(``claimed_directions``), and, where a formula leaves a bracket at a point
that is not differentiable, each tied entry moved alone (``tied_entries``:
AD's conventions composed across kinks give one such piece's derivative).
``discontinuous`` tells an output that jumps at the point from one with a
kink. ``fd_step`` is every step's size; ``distance`` how far the points
beside lie.
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.core.coords import to_real
from adcheck.gradcheck.core.evaluation import Evaluator


def moved_by(arrays: dict, direction: dict, step: float) -> dict:
    """``arrays`` moved by ``step`` along ``direction`` (flat indices, or
    whole arrays of the same shapes)."""
    out = {}
    for i, ks in direction.items():
        a = arrays[i].copy()
        if isinstance(ks, list):
            a.reshape(-1)[ks] += step
        else:
            a += step * np.asarray(ks)
        out[i] = a
    return {**arrays, **out}


def nearby(arrays: dict, real_inputs: list) -> list:
    """Directions to the pieces around a kink or a tie, for points beside it:
    entries ordered by index either way (the conventions of stable sorts and
    first-index argmax) and one fixed random order; each moves every entry."""
    rng = np.random.default_rng(0)
    sizes = [arrays[i].size for i in real_inputs]
    ramp = np.arange(1.0, sum(sizes) + 1.0) / max(sum(sizes), 1)
    out = []
    for values in (ramp, -ramp, rng.permutation(ramp) * rng.choice([-1.0, 1.0], ramp.size)):
        parts = np.split(values, np.cumsum(sizes)[:-1])
        out.append({i: part.reshape(arrays[i].shape) for i, part in zip(real_inputs, parts)})
    return out


def _central(ev: Evaluator, offset: dict, direction: dict, h: float) -> dict:
    up = ev.evaluate(moved_by(offset, direction, h), "exploring beside a kink")
    down = ev.evaluate(moved_by(offset, direction, -h), "exploring beside a kink")
    with np.errstate(all="ignore"):
        return {o: (to_real(up[o]) - to_real(down[o])) / (2 * h) for o in up}


def quotients_beside(ev: Evaluator, arrays: dict, direction: dict, h: float,
                     offsets: list) -> list:
    """Central quotients along ``direction`` at points ``offsets`` away (the
    pieces around the point), Richardson-extrapolated from ``h`` and ``h / 2``,
    each as the two ends of its error interval; those outside the domain or not
    finite are left out. (A point beside a repeated singular value is only a
    shift away from it: the quotient's h^2 term, ~h^2 / gap^2, was 3e-4 of the
    derivative at complex svdvals' zero matrix, three times the bracket's
    tolerance, before the extrapolation.)"""
    out = []
    for offset in offsets:
        try:
            coarse = _central(ev, offset, direction, h)
            fine = _central(ev, offset, direction, h / 2)
        except Exception:
            continue
        with np.errstate(all="ignore"):
            value = {o: (4 * fine[o] - coarse[o]) / 3 for o in fine}
            error = {o: np.abs(fine[o] - coarse[o]) / 3 for o in fine}
        if all(np.all(np.isfinite(v)) for v in value.values()):
            out += [{o: v - error[o] for o, v in value.items()},
                    {o: v + error[o] for o, v in value.items()}]
    return out


def discontinuous(ev: Evaluator, directions_beside: list, arrays: dict, shift: float) -> set:
    """The outputs that jump at the point: moved ``shift`` and ``shift / 16``
    beside it they change about as much (a Lipschitz function changes 16
    times less; a chosen basis, eigenvectors at a repeated eigenvalue, turns
    by the same angle however small the move)."""
    base, out = ev.problem.out_arrays, set()
    for direction in directions_beside:
        changes = []
        for step in (shift, shift / 16):
            try:
                moved = ev.evaluate(moved_by(arrays, direction, step), "exploring beside the point")
            except Exception:    # outside the domain beside it: no evidence either way
                break
            with np.errstate(all="ignore"):
                changes.append({o: float(np.max(np.abs(to_real(v) - to_real(base[o])),
                                                initial=0.0)) for o, v in moved.items()})
        if len(changes) < 2:
            continue
        for o, far in changes[0].items():
            near = changes[1][o]
            scale = float(np.max(np.abs(to_real(base[o])), initial=0.0))
            if near > 0.5 * far and near > 1e-6 * (1.0 + scale):
                out.add(o)
    return out


#: the least step: the smallest normal double (a step of 1e-300 beside entries of
#: 1e-300 moved them by 100 %, and every output looked like it jumped)
TINY_STEP = float(np.finfo(np.float64).tiny)


def fd_step(peak: float, eps: float) -> float:
    """A power of two near ``eps ** (1/3)`` times ``min(peak, 1)`` (an absolute
    step beyond 1, where a function may oscillate), and at least 1024 units in
    the last place of ``peak``: ``x + h`` and ``x + h / 2`` are then exact."""
    target = eps ** (1 / 3) * (min(peak, 1.0) if peak > 0 else 1.0)
    return float(2.0 ** np.ceil(np.log2(max(target, 1024 * eps * peak, TINY_STEP))))


def surroundings(ev: Evaluator, arrays: dict, real_inputs: list, eps: float,
                  jacobians: dict | None = None) -> tuple:
    """The points beside this one (``nearby``, and ``claimed`` by the formula)
    and the outputs that jump here."""
    shift = distance(arrays, eps)
    beside = nearby(arrays, real_inputs)
    claimed = claimed_directions(jacobians or {}, arrays, real_inputs)
    return ([moved_by(arrays, d, shift) for d in beside + claimed],
            discontinuous(ev, beside, arrays, shift))


def tied_entries(arrays: dict) -> set:
    """The entries ``(input, flat index)`` equal to another entry: the ties and
    zeros that make a point a kink (those ``directions`` groups)."""
    flat = np.concatenate([a.reshape(-1) for a in arrays.values()])
    values, counts = np.unique(flat, return_counts=True)
    shared = values[counts > 1]
    return {(i, int(k)) for i, a in arrays.items()
            for k in np.flatnonzero(np.isin(a.reshape(-1), shared))}


def distance(arrays: dict, eps: float) -> float:
    """How far the points beside this one are: 256 finite-difference steps."""
    peak = max(float(np.max(np.abs(a), initial=0.0)) for a in arrays.values())
    return 256 * fd_step(peak, eps)


def claimed_directions(jacobians: dict, arrays: dict, real_inputs: list) -> list:
    """Directions to the piece the formula claims: for each output and mode, its
    rows weighted by a ramp over the output's entries, ``J^T c``. Where the
    formula picks one of many limiting Jacobians (a basis of a repeated
    eigenvalue's eigenspace, one of tied entries), the point moved that way is
    where that pick is the derivative: ``A + s V diag(c) V^H`` has the
    eigenvectors ``V`` the formula used, ``x + s e_i`` makes entry ``i`` the max."""
    out = []
    for jac in jacobians.values():
        rows = {}
        for (o, i), block in jac.blocks.items():
            # (dense blocks only: a compressed or probed Jacobian holds J S, not J)
            if i in real_inputs and np.ndim(block) == 2 and block.shape[1] == arrays[i].size:
                rows.setdefault(o, {})[i] = block
        for blocks in rows.values():
            n = next(iter(blocks.values())).shape[0]
            ramp = np.arange(1.0, n + 1.0) / max(n, 1)
            for weights in (ramp, ramp[::-1]):    # outputs ascending (eigh) or descending (svd)
                with np.errstate(all="ignore"):
                    d = {i: np.asarray(weights @ b).reshape(arrays[i].shape)
                         for i, b in blocks.items()}
                top = max(float(np.max(np.abs(v), initial=0.0)) for v in d.values())
                if np.isfinite(top) and top > 0:
                    out.append({i: v / top for i, v in d.items()})
    return out
