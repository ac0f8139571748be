"""One-sided verdicts at points where the function may not be differentiable.

At a kink, a tie or a jump the numerical side is two one-sided derivatives,
not one. Along each direction tested (every single coordinate, every group
of equal entries moved together, all entries together) the formula's
directional derivative ``J u`` must lie between the left one,
``(f(x) - f(x - h u)) / h``, and the right one, ``(f(x + h u) - f(x)) / h``,
within tolerance. Each side is Richardson-extrapolated from steps ``h`` and
``h / 2``; a side whose two steps disagree (a jump: it grows like ``1 / h``)
or that is not finite gives no bracket.

The bracket also takes in central quotients at points beside this one: a
few fixed ways (``nearby``) and the piece the formula claims (``_claimed``:
the formula picks one limiting Jacobian of many at a repeated eigenvalue or a
tie, and the point moved along its own rows is where that pick holds).

An output that jumps at the point (it changes as much a sixteenth of the
way beside it as all the way: eigenvectors at a repeated eigenvalue, Q of a
rank-deficient matrix) makes the point not differentiable (``_discontinuous``).
A direction that excludes a finite formula is measured again at other steps
(``_resolved``): quotients that depend on the step (a forward that cancels,
jumps finer than the step) leave the point unresolved, not failed; so does a
step that moves some entry by more than itself where the function is not
linear in that entry over the step (``secants``). The
formula's own rounding (how far its Jacobian moves with the inputs moved by
their rounding in norm: ``wobble``) widens the tolerance where the point is
ill-conditioned.

``judge`` returns ``"fail"`` (some direction's bracket excludes a finite
formula, or the formula is NaN or inf where every bracket formed and is
closed: the function is differentiable there), ``"kink"`` (every bracket
holds the formula and some bracket is open: a subgradient convention such as
relu'(0) = 0; NaN at such a point, torch's hypot(0, 0), is ``"nondiff"``),
``"agree"`` (every bracket holds it and is closed: the point is smooth and
the formula right), ``"unresolved"`` (see above) or ``"nondiff"`` (an output
jumps, or some needed bracket could not be formed).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from adcheck.gradcheck.core.coords import from_real, to_real
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.explore.secants import linear_alone, overstepped

#: relative agreement asked of the two steps of one side, and of the bracket
SIDE_TOL = 1e-2
BRACKET_RTOL = 1e-4
#: directions tried at most (coordinates first, then groups of equal entries)
MAX_DIRECTIONS = 64


@dataclass
class Bracket:
    """Where the verdict came from: the direction (input index: flat entries),
    the two one-sided derivatives and the formula's, for output ``out_idx``
    at its flat real coordinate ``row``; ``note``: what the op's mpmath reference
    found at a failing point (``arbiter``), if it was consulted."""

    verdict: str
    mode: str | None = None
    direction: dict | None = None
    out_idx: int | None = None
    row: int | None = None
    left: float | None = None
    right: float | None = None
    formula: float | None = None
    note: str = ""


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


def _central(ev: Evaluator, offset: dict, direction: dict, h: float) -> dict:
    up = ev.evaluate(_moved(offset, direction, h), "exploring beside a kink")
    down = ev.evaluate(_moved(offset, direction, -h), "exploring beside a kink")
    with np.errstate(all="ignore"):
        return {o: (to_real(up[o]) - to_real(down[o])) / (2 * h) for o in up}


def _beside(ev: Evaluator, arrays: dict, direction: dict, h: float, offsets: list) -> list:
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


#: the least step: the smallest normal double (a step of 1e-300 beside entries of
#: 1e-300 moved them by 100 %, and every output looked like it jumped)
TINY_STEP = float(np.finfo(np.float64).tiny)


def fd_step(peak: float, eps: float) -> float:
    """A power of two near ``eps ** (1/3)`` times ``min(peak, 1)`` (an absolute
    step beyond 1, where a function may oscillate), and at least 1024 units in
    the last place of ``peak``: ``x + h`` and ``x + h / 2`` are then exact."""
    target = eps ** (1 / 3) * (min(peak, 1.0) if peak > 0 else 1.0)
    return float(2.0 ** np.ceil(np.log2(max(target, 1024 * eps * peak, TINY_STEP))))


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


def _formula(jacobian, direction: dict, out_idx: int, arrays: dict) -> np.ndarray | None:
    """``J u`` for output ``out_idx`` along ``direction``; None where the formula
    has no dense block for it (a compressed or probed Jacobian holds ``J S``)."""
    total = None
    for i, ks in direction.items():
        block = jacobian.blocks.get((out_idx, i))
        if block is None:
            continue
        if np.ndim(block) != 2 or block.shape[1] != arrays[i].size:
            return None
        column = block[:, ks].sum(axis=1)
        total = column if total is None else total + column
    return total


class RealView:
    """An evaluator seen in the real coordinates of some inputs (a complex entry
    is two: its real and its imaginary part, as the Jacobians' columns are), so
    that every direction, step and bracket below is real for complex inputs too."""

    def __init__(self, ev: Evaluator, inputs: list):
        self.ev, self.problem = ev, ev.problem
        self.native = {i: (ev.problem.arrays[i].shape, ev.problem.arrays[i].dtype)
                       for i in inputs}

    def evaluate(self, arrays: dict, what: str) -> dict:
        return self.ev.evaluate({i: from_real(a, *self.native[i]) if i in self.native else a
                                 for i, a in arrays.items()}, what)


def judge(ev: Evaluator, jacobians: dict, real_inputs: list, wobble: dict | None = None) -> Bracket:
    """The one-sided verdict at ``ev``'s point for the AD ``jacobians`` (by
    mode), over the real inputs ``real_inputs`` (see the module docstring).
    ``wobble``: by mode and (output, input) block, for each row, the allowance
    for the formula's own rounding (``wobble.allowance``: its Jacobian moved
    with the inputs moved by their rounding in norm)."""
    return _Judge(ev, jacobians, real_inputs, wobble or {}).verdict()


class _Judge:
    """The state of one ``judge``: the point, what has been seen so far."""

    def __init__(self, ev: Evaluator, jacobians: dict, real_inputs: list, wobble: dict):
        p = ev.problem
        ev = RealView(ev, real_inputs)
        self.ev, self.jacobians, self.wobble = ev, jacobians, wobble
        self.arrays = {i: to_real(p.arrays[i]) for i in real_inputs}
        self.eps = max([p.epsilon(out_idx=o) for o in p.float_out]
                       + [p.epsilon(in_idx=i) for i in real_inputs])
        self.values = {o: float(np.max(np.abs(to_real(p.out_arrays[o])), initial=0.0))
                       for o in p.float_out}
        self.floor = _floor(p, self.eps)
        self.offsets, self.jumps = _surroundings(ev, self.arrays, real_inputs, self.eps,
                                                 jacobians)
        self.real_inputs = real_inputs
        self.opened, self.formed, self.unresolved, self.nonfinite = False, True, False, None

    def verdict(self) -> Bracket:
        if self.jumps:
            # an output jumps (a chosen basis: eigenvectors at a repeated eigenvalue, Q of
            # a rank-deficient matrix): the function is not differentiable here, and the
            # outputs defined through that choice (R = Q^H A) have no derivative to judge
            return Bracket("nondiff")
        for direction in directions(self.arrays, self.real_inputs):
            failed = self._direction(direction)
            if failed is not None:
                return failed
        if self.nonfinite is not None:
            # NaN or inf where the function is differentiable (every bracket formed and
            # closed) is a failure; where it is not (a kink, a jump, an edge of the
            # domain: torch's hypot(0, 0), eigh at a repeated eigenvalue) it is not judged
            return self.nonfinite if self.formed and not self.opened else Bracket("nondiff")
        if self.opened:
            return Bracket("kink")
        if self.unresolved:
            return Bracket("unresolved")
        return Bracket("agree" if self.formed else "nondiff")

    def _row_noise_of(self, o: int, row: int, peak: float):
        """The rounding of output ``o``'s entry ``row`` alone, over a unit step: a
        failing row is measured again (``_resolved``) at its own scale, not the
        output's largest entry's (fmod(x, 1e-30) beside entries of 1.9: the
        quotients changed with the step by 1e5, within the output's noise)."""
        value = abs(float(np.reshape(to_real(self.ev.problem.out_arrays[o]), -1)[row]))

        def noise_of(slope):
            return 64 * self.eps * (value + peak * slope)
        return noise_of

    def _noise_of(self, o: int, peak: float, h: float):
        def noise_of(slope):  # rounding of f and of its argument, over the step
            return 64 * self.eps * (self.values[o] + peak * slope) / h
        return noise_of

    def _direction(self, direction: dict) -> Bracket | None:
        """A failing ``Bracket`` along ``direction``, or None (and the state updated)."""
        arrays, ev = self.arrays, self.ev
        peak = max(float(np.max(np.abs(arrays[i].reshape(-1)[ks]))) for i, ks in direction.items())
        h = fd_step(peak, self.eps)
        pairs = [_quotients(ev, arrays, direction, sign, h) for sign in (-1.0, 1.0)]
        if pairs[0] is None or pairs[1] is None:
            self.formed = False
            return None
        beside = None
        for o in pairs[0][0]:
            sides = [_extrapolated(pair, o, self._noise_of(o, peak, h)) for pair in pairs]
            if sides[0] is None or sides[1] is None:
                self.formed = False
                continue
            if beside is None:
                beside = _beside(ev, arrays, direction, h, self.offsets)
            failed = self._output(direction, o, sides, beside, peak, h)
            if failed is not None:
                return failed
        return None

    def _output(self, direction, o, sides, beside, peak, h) -> Bracket | None:
        (left, noise_l), (right, noise_r) = sides
        if self.values[o] == 0 and not np.any(left) and not np.any(right):
            # exactly 0 and flat: the forward underflowed or cancelled; a slope
            # whose change over the input's scale is below rounding is unseen
            noise_l = noise_l + 64 * self.eps / max(peak, 1e-300)
        low = np.min([left, right] + [b[o] for b in beside], axis=0)
        high = np.max([left, right] + [b[o] for b in beside], axis=0)
        for mode, jac in self.jacobians.items():
            formula = _formula(jac, direction, o, self.arrays)
            if formula is None:
                continue
            noise = np.maximum(noise_l, noise_r) + self.floor + self._wobble(mode, direction, o)
            self.opened |= _open(left, right, noise)
            row = _bracket(formula, low, high, noise)
            if row < 0:
                continue
            found = Bracket("fail", mode, direction, o, row, float(left[row]),
                            float(right[row]), float(formula[row]))
            if not np.isfinite(formula[row]):
                self.nonfinite = self.nonfinite or found
            elif peak * self.eps >= 2:
                self.formed = False    # every float an integer here: a step function's
                #                        jumps are one unit in the last place apart
            elif not _resolved(self.ev, self.arrays, direction, h, o, row, formula[row],
                               self._row_noise_of(o, row, peak)):
                self.unresolved = True
            elif not all(linear_alone(self.ev, self.arrays, entry, h, o, row,
                                      self._row_noise_of(o, row, h))
                         for entry in overstepped(self.arrays, direction, h)):
                self.unresolved = True    # secants far from the point in an entry's own scale
            else:
                return found
        return None

    def _wobble(self, mode: str, direction: dict, o: int) -> np.ndarray | float:
        """The allowance for the formula's own rounding along ``direction``: the
        sum over its inputs of each block's (``wobble.allowance``)."""
        changes = [self.wobble.get(mode, {}).get((o, i)) for i in direction]
        return sum(c for c in changes if c is not None)


#: the steps beside ``h`` at which a failing direction is measured again (``_resolved``)
RUNGS = (16.0, 1 / 16, 1 / 4096)


def _resolved(ev: Evaluator, arrays: dict, direction: dict, h: float, o: int, row: int,
              formula: float, noise_of) -> bool:
    """Whether the numerical side resolves the derivative of output ``o``'s
    entry ``row`` at step ``h``: every other step (``RUNGS``) agrees with
    ``h``'s one-sided derivatives within their errors (``noise_of``: that
    entry's rounding), and none brackets the formula that ``h`` excludes. A
    forward that cancels (gelu's 1 + erf(x) at -7), jumps finer than the step
    (fmod by 1e-8 or 1e-30, rounding to decimals at 1e11) or is otherwise
    conditioned worse than its rounding says gives quotients that depend on
    the step: not judged there."""
    here = None
    for rung in (1.0,) + RUNGS:
        step = h * rung
        pairs = [_quotients(ev, arrays, direction, sign, step) for sign in (-1.0, 1.0)]
        if pairs[0] is None or pairs[1] is None:
            continue
        pairs = [tuple({o: np.reshape(q[o], -1)[row:row + 1]} for q in pair) for pair in pairs]
        sides = [_extrapolated(pair, o, lambda slope: noise_of(slope) / step) for pair in pairs]
        if sides[0] is None or sides[1] is None:    # a jump within this step
            return False
        there = [(v[0], e[0]) for v, e in sides]
        if here is None:
            here = there    # step h itself: the formula is outside its bracket
            continue
        for (a, err_a), (b, err_b) in zip(here, there):
            if abs(a - b) > err_a + err_b + BRACKET_RTOL * max(abs(a), abs(b)):
                return False
        low, high = min(there[0][0], there[1][0]), max(there[0][0], there[1][0])
        tol = _tolerance(np.array([low]), np.array([high]), max(there[0][1], there[1][1]))
        if low - tol[0] <= formula <= high + tol[0]:
            return False
    return True


def _floor(problem, eps: float) -> float:
    """Derivatives within 1/eps of the smallest normal number: no quotient
    resolves them (the steps underflow them into subnormals)."""
    return max(float(np.finfo(np.asarray(problem.out_arrays[o]).real.dtype).tiny) / eps
               for o in problem.float_out)


def _surroundings(ev: Evaluator, arrays: dict, real_inputs: list, eps: float,
                  jacobians: dict | None = None) -> tuple:
    """The points beside this one (``nearby``, and ``claimed`` by the formula)
    and the outputs that jump here."""
    peak = max(float(np.max(np.abs(a), initial=0.0)) for a in arrays.values())
    shift = 256 * fd_step(peak, eps)
    beside = nearby(arrays, real_inputs)
    claimed = _claimed(jacobians or {}, arrays, real_inputs)
    return ([_moved(arrays, d, shift) for d in beside + claimed],
            _discontinuous(ev, beside, arrays, shift))


def jumps(ev: Evaluator, real_inputs: list) -> set:
    """The outputs at ``ev``'s point that jump there (``_discontinuous``)."""
    p = ev.problem
    arrays = {i: to_real(p.arrays[i]) for i in real_inputs}
    ev = RealView(ev, real_inputs)
    eps = max([p.epsilon(out_idx=o) for o in p.float_out]
              + [p.epsilon(in_idx=i) for i in real_inputs])
    return _surroundings(ev, arrays, real_inputs, eps)[1]


def _claimed(jacobians: dict, arrays: dict, real_inputs: list) -> list:
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
