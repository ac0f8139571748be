"""One-sided verdicts at points where the function may not be differentiable.

At a kink, a tie or a jump the numerical side is two one-sided derivatives,
not one. Along each direction tested (every single coordinate, every group
of equal entries moved together, all entries together) the formula's
directional derivative ``J u`` must lie between the left one,
``(f(x) - f(x - h u)) / h``, and the right one, ``(f(x + h u) - f(x)) / h``,
within tolerance. Each side is Richardson-extrapolated from steps ``h`` and
``h / 2``; a side whose two steps disagree (a jump: it grows like ``1 / h``)
or that is not finite gives no bracket.

An output that jumps at the point (it changes as much a sixteenth of the
way beside it as all the way: eigenvectors at a repeated eigenvalue) is not
differentiable there and gives no bracket (``_discontinuous``).

``judge`` returns ``"fail"`` (some direction's bracket excludes the
formula, or the formula is NaN or inf where both sides are finite),
``"kink"`` (every bracket holds the formula and some bracket is open: a
subgradient convention such as relu'(0) = 0), ``"agree"`` (every bracket
holds it and is closed: the point is smooth and the formula right) or
``"nondiff"`` (some needed bracket could not be formed).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from adcheck.gradcheck.core.coords import to_real
from adcheck.gradcheck.core.evaluation import Evaluator

#: relative agreement asked of the two steps of one side, and of the bracket
SIDE_TOL = 1e-2
BRACKET_RTOL = 1e-4
#: directions tried at most (coordinates first, then groups of equal entries)
MAX_DIRECTIONS = 64


@dataclass
class Bracket:
    """Where the verdict came from: the direction (input index: flat entries),
    the two one-sided derivatives and the formula's, for output ``out_idx``
    at its flat real coordinate ``row``."""

    verdict: str
    mode: str | None = None
    direction: dict | None = None
    out_idx: int | None = None
    row: int | None = None
    left: float | None = None
    right: float | None = None
    formula: float | None = None


def directions(arrays: dict, real_inputs: list) -> list:
    """Unit coordinates, then groups of equal entries (within and across
    inputs, zeros included), then all entries together; each a dict
    ``{in_idx: flat indices}`` moved by +1."""
    single = [{i: [k]} for i in real_inputs for k in range(arrays[i].size)]
    groups: dict = {}
    for i in real_inputs:
        for k, value in enumerate(arrays[i].reshape(-1)):
            groups.setdefault(float(value), []).append((i, k))
    joint = []
    for members in groups.values():
        if len(members) > 1:
            direction: dict = {}
            for i, k in members:
                direction.setdefault(i, []).append(k)
            joint.append(direction)
    joint.append({i: list(range(arrays[i].size)) for i in real_inputs})
    joint = joint[:MAX_DIRECTIONS // 2]    # the joint ones find ties: keep them
    return single[:MAX_DIRECTIONS - len(joint)] + joint


def _moved(arrays: dict, direction: dict, step: float) -> dict:
    """``arrays`` moved by ``step`` along ``direction`` (flat indices, or
    whole arrays of the same shapes)."""
    out = {}
    for i, ks in direction.items():
        a = arrays[i].copy()
        if isinstance(ks, np.ndarray):
            a += step * ks
        else:
            a.reshape(-1)[ks] += step
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


def _quotients(ev: Evaluator, arrays: dict, direction: dict, sign: float, h: float):
    """The one-sided difference quotients on side ``sign`` at steps ``h`` and
    ``h / 2``, by output; ``None`` where the function raises (outside its domain)."""
    base = ev.problem.out_arrays

    def quotient(step):
        outs = ev.evaluate(_moved(arrays, direction, sign * step), "exploring one-sided "
                           "derivatives")
        with np.errstate(all="ignore"):
            return {o: sign * (to_real(outs[o]) - to_real(base[o])) / step for o in outs}
    try:
        return quotient(h), quotient(h / 2)
    except Exception:    # outside the domain on this side: no bracket
        return None


def _beside(ev: Evaluator, arrays: dict, direction: dict, h: float, offsets: list) -> list:
    """Central quotients along ``direction`` at points ``offsets`` away (the
    pieces around the point); those outside the domain or not finite are left out."""
    out = []
    for offset in offsets:
        try:
            up = ev.evaluate(_moved(offset, direction, h), "exploring beside a kink")
            down = ev.evaluate(_moved(offset, direction, -h), "exploring beside a kink")
        except Exception:
            continue
        with np.errstate(all="ignore"):
            value = {o: (to_real(up[o]) - to_real(down[o])) / (2 * h) for o in up}
        if all(np.all(np.isfinite(v)) for v in value.values()):
            out.append(value)
    return out


def _discontinuous(ev: Evaluator, directions_beside: list, arrays: dict, shift: float) -> set:
    """The outputs that jump at the point: moved ``shift`` and ``shift / 16``
    beside it they change about as much (a Lipschitz function changes 16
    times less; a chosen basis, eigenvectors at a repeated eigenvalue, turns
    by the same angle however small the move)."""
    base, out = ev.problem.out_arrays, set()
    for direction in directions_beside:
        changes = []
        for step in (shift, shift / 16):
            try:
                moved = ev.evaluate(_moved(arrays, direction, step), "exploring beside the point")
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


def _step(peak: float, eps: float) -> float:
    """A power of two near ``eps ** (1/3)`` times ``min(peak, 1)`` (an absolute
    step beyond 1, where a function may oscillate), and at least 1024 units in
    the last place of ``peak``: ``x + h`` and ``x + h / 2`` are then exact."""
    target = eps ** (1 / 3) * (min(peak, 1.0) if peak > 0 else 1.0)
    return float(2.0 ** np.ceil(np.log2(max(target, 1024 * eps * peak, 1e-300))))


def _extrapolated(pair, o, noise_of) -> tuple | None:
    """``(2 q(h/2) - q(h), its error)`` for output ``o`` (the rounding noise and
    the steps' spread), or ``None`` where not finite or where the quotient
    grows as the step halves (a jump)."""
    coarse, fine = pair[0][o], pair[1][o]
    if not (np.all(np.isfinite(coarse)) and np.all(np.isfinite(fine))):
        return None
    scale = np.maximum(np.abs(coarse), np.abs(fine))
    noise = noise_of(scale)
    spread = np.abs(fine - coarse)
    # a jump grows like 1 / h as the step halves; truncation shrinks with it
    if np.any((spread > SIDE_TOL * scale + noise) & (np.abs(fine) > 1.5 * np.abs(coarse))):
        return None
    return 2 * fine - coarse, noise + spread


def _formula(jacobian, direction: dict, out_idx: int) -> np.ndarray | None:
    total = None
    for i, ks in direction.items():
        block = jacobian.blocks.get((out_idx, i))
        if block is None:
            continue
        column = block[:, ks].sum(axis=1)
        total = column if total is None else total + column
    return total


def judge(ev: Evaluator, jacobians: dict, real_inputs: list) -> Bracket:
    """The one-sided verdict at ``ev``'s point for the AD ``jacobians`` (by
    mode), over the real inputs ``real_inputs`` (see the module docstring)."""
    p = ev.problem
    arrays = {i: p.arrays[i].astype(np.float64) for i in real_inputs}
    eps = max([p.epsilon(out_idx=o) for o in p.float_out]
              + [p.epsilon(in_idx=i) for i in real_inputs])
    values = {o: float(np.max(np.abs(to_real(p.out_arrays[o])), initial=0.0))
              for o in p.float_out}
    floor = _floor(p, eps)
    offsets, jumps = _surroundings(ev, arrays, real_inputs, eps)
    opened, formed = False, True
    for direction in directions(arrays, real_inputs):
        peak = max(float(np.max(np.abs(arrays[i].reshape(-1)[ks]))) for i, ks in direction.items())
        h = _step(peak, eps)
        pairs = [_quotients(ev, arrays, direction, sign, h) for sign in (-1.0, 1.0)]
        if pairs[0] is None or pairs[1] is None:
            formed = False
            continue
        beside = None
        for o in pairs[0][0]:
            if o in jumps:      # a chosen basis (eigenvectors at a repeated eigenvalue)
                formed = False  # that jumps: no derivative to bracket
                continue

            def noise_of(slope, o=o):  # rounding of f and of its argument, over the step
                return 64 * eps * (values[o] + peak * slope) / h
            sides = [_extrapolated(pair, o, noise_of) for pair in pairs]
            if sides[0] is None or sides[1] is None:
                formed = False
                continue
            if beside is None:
                beside = _beside(ev, arrays, direction, h, offsets)
            (left, noise_l), (right, noise_r) = sides
            if values[o] == 0 and not np.any(left) and not np.any(right):
                # exactly 0 and flat: the forward underflowed or cancelled; a slope
                # whose change over the input's scale is below rounding is unseen
                noise_l = noise_l + 64 * eps / max(peak, 1e-300)
            low = np.min([left, right] + [b[o] for b in beside], axis=0)
            high = np.max([left, right] + [b[o] for b in beside], axis=0)
            for mode, jac in jacobians.items():
                formula = _formula(jac, direction, o)
                noise = np.maximum(noise_l, noise_r) + floor
                verdict = _bracket(formula, low, high, noise)
                if verdict is None:
                    continue
                row = verdict
                if row >= 0 and np.isfinite(formula[row]) and peak * eps >= 2:
                    formed = False    # every float an integer here: a step function's
                    continue          # jumps are one unit in the last place apart
                if row >= 0:
                    return Bracket("fail", mode, direction, o, row, float(left[row]),
                                   float(right[row]), float(formula[row]))
                opened |= _open(left, right, noise)
    return Bracket("kink" if opened else ("agree" if formed else "nondiff"))


def _floor(problem, eps: float) -> float:
    """Derivatives within 1/eps of the smallest normal number: no quotient
    resolves them (the steps underflow them into subnormals)."""
    return max(float(np.finfo(np.asarray(problem.out_arrays[o]).real.dtype).tiny) / eps
               for o in problem.float_out)


def _surroundings(ev: Evaluator, arrays: dict, real_inputs: list, eps: float) -> tuple:
    """The points beside this one (``nearby``) and the outputs that jump here."""
    peak = max(float(np.max(np.abs(a), initial=0.0)) for a in arrays.values())
    shift = 256 * _step(peak, eps)
    beside = nearby(arrays, real_inputs)
    return ([_moved(arrays, d, shift) for d in beside],
            _discontinuous(ev, beside, arrays, shift))


def _tolerance(low, high, noise):
    scale = np.maximum(np.abs(low), np.abs(high))
    norm = float(np.max(scale, initial=0.0))
    return BRACKET_RTOL * (scale + np.abs(high - low)) + 1e-9 * norm + noise


def _bracket(formula, low, high, noise):
    """The first row whose formula lies outside ``[low, high]`` (-1 if none;
    ``None`` when the formula has no such output). ``noise``: the
    rounding of the quotients, by row, and the least resolvable value."""
    if formula is None:
        return None
    tol = _tolerance(low, high, noise)
    bad = ~np.isfinite(formula) | (formula < low - tol) | (formula > high + tol)
    rows = np.flatnonzero(bad)
    return int(rows[0]) if rows.size else -1


def _open(left, right, noise) -> bool:
    """Whether the one-sided derivatives differ: a kink or a tie."""
    low, high = np.minimum(left, right), np.maximum(left, right)
    return bool(np.any(high - low > _tolerance(low, high, noise)))
