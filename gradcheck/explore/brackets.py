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
few fixed ways (``nearby``) and the piece the formula claims (``beside.claimed_directions``:
the formula picks one limiting Jacobian of many at a repeated eigenvalue or a
tie, and the point moved along its own rows is where that pick holds).

An output that jumps at the point (it changes as much a sixteenth of the
way beside it as all the way: eigenvectors at a repeated eigenvalue, Q of a
rank-deficient matrix) makes the point not differentiable (``beside.discontinuous``).
A direction that excludes a finite formula is measured again at other steps
(``_resolved``): quotients that depend on the step (a forward that cancels,
jumps finer than the step) leave the point unresolved, not failed; so does a
step that moves some entry by more than itself where the function is not
linear in that entry over the step (``secants``). The
formula's own rounding (how far its Jacobian moves with the inputs moved by
their rounding in norm: ``wobble``) widens the tolerance where the point is
ill-conditioned. A second-order check's failing row that is below the
forward's rounding is handed to the forward's own second differences
(``forwardwitness``, the ``witness``): where they cannot refute the formula,
the row is not judged.

``judge`` returns ``"fail"`` (some direction's bracket excludes a finite
formula, or the formula is NaN or inf where every bracket formed and is
closed: the function is differentiable there), ``"kink"`` (every bracket
holds the formula and some bracket is open: a subgradient convention such as
relu'(0) = 0; NaN at such a point, torch's hypot(0, 0), is ``"nondiff"``),
``"agree"`` (every bracket holds it and is closed: the point is smooth and
the formula right), ``"unresolved"`` (see above), ``"rounding"`` (a row the
witness excused, and no other failure) or ``"nondiff"`` (an output jumps, or
some needed bracket could not be formed).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from adcheck.gradcheck.core.coords import from_real, to_real
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.explore import beside as points
from adcheck.gradcheck.explore.secants import linear_alone, overstepped

#: relative agreement asked of the two steps of one side, and of the bracket
SIDE_TOL = 1e-2
BRACKET_RTOL = 1e-4
#: directions tried at most (coordinates first, then groups of equal entries)
MAX_DIRECTIONS = 64
#: tied entries moved one at a time to the pieces beside a kink where a formula
#: leaves a bracket (``_Judge._limiting``), at most: the direction's own first
LIMITING_ENTRIES = 64


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


def _quotients(ev: Evaluator, arrays: dict, direction: dict, sign: float, h: float):
    """The one-sided difference quotients on side ``sign`` at steps ``h`` and
    ``h / 2``, by output; ``None`` where the function raises (outside its domain)."""
    base = ev.problem.out_arrays

    def quotient(step):
        outs = ev.evaluate(points.moved_by(arrays, direction, sign * step), "exploring one-sided "
                           "derivatives")
        with np.errstate(all="ignore"):
            return {o: sign * (to_real(outs[o]) - to_real(base[o])) / step for o in outs}
    try:
        return quotient(h), quotient(h / 2)
    except Exception:    # outside the domain on this side: no bracket
        return None


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


def judge(ev: Evaluator, jacobians: dict, real_inputs: list, wobble: dict | None = None,
          witness=None) -> Bracket:
    """The one-sided verdict at ``ev``'s point for the AD ``jacobians`` (by
    mode), over the real inputs ``real_inputs`` (see the module docstring).
    ``wobble``: by mode and (output, input) block, for each row, the allowance
    for the formula's own rounding (``wobble.allowance``: its Jacobian moved
    with the inputs moved by their rounding in norm). ``witness``: a second-order
    check's forward (``forwardwitness.Witness``), which may excuse a row of a first
    derivative below the forward's rounding."""
    return _Judge(ev, jacobians, real_inputs, wobble or {}, witness).verdict()


class _Judge:
    """The state of one ``judge``: the point, what has been seen so far."""

    def __init__(self, ev: Evaluator, jacobians: dict, real_inputs: list, wobble: dict,
                 witness=None):
        p = ev.problem
        ev = RealView(ev, real_inputs)
        self.ev, self.jacobians, self.wobble, self.witness = ev, jacobians, wobble, witness
        self.arrays = {i: to_real(p.arrays[i]) for i in real_inputs}
        self.eps = max([p.epsilon(out_idx=o) for o in p.float_out]
                       + [p.epsilon(in_idx=i) for i in real_inputs])
        self.values = {o: float(np.max(np.abs(to_real(p.out_arrays[o])), initial=0.0))
                       for o in p.float_out}
        self.floor = _floor(p, self.eps)
        self.offsets, self.jumps = points.surroundings(ev, self.arrays, real_inputs, self.eps,
                                                 jacobians)
        self.shift = points.distance(self.arrays, self.eps)
        self.tied = points.tied_entries(self.arrays)
        self.real_inputs = real_inputs
        self.opened, self.formed, self.unresolved, self.nonfinite = False, True, False, None
        self.rounded = False    # some row excused by the forward's differences (``witness``)

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
        if self.rounded:
            return Bracket("rounding")
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
        h = points.fd_step(peak, self.eps)
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
                beside = points.quotients_beside(ev, arrays, direction, h, self.offsets)
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
            elif self._limiting(direction, o, row, float(formula[row]), h, noise, left, right):
                self.opened = True    # a piece's derivative, at a point that is a kink
            elif self.witness is not None and self.witness.excuses(o, row, direction,
                                                                   float(formula[row])):
                self.rounded = True   # a first derivative below the forward's rounding
            else:
                return found
        return None

    def _limiting(self, direction, o, row, value, h, noise, left, right) -> bool:
        """Whether ``value`` (the formula along ``direction``) is the derivative
        on a piece beside a point that is not differentiable: the point moved
        by one of its tied entries (``beside.tied_entries``: the ties and zeros
        that make it a kink), either way.

        At such a point the derivative along a direction is not linear in the
        direction, and AD's per-entry conventions compose into the Jacobian of
        one neighbouring piece, which the one-sided derivatives can both
        exclude: relu(g z + b) . w at g = b = 0 (z and w of mixed signs), or
        relu'(0) = 0 at a zero-weight channel of a batch-normed layer, whose AD
        is the derivative where that channel's bias is below 0. A formula that
        is no piece's (tied maxima each given the whole gradient) still fails.
        """
        noise = _row(noise, row)
        kink = self.opened or _open(left[row:row + 1], right[row:row + 1], noise)
        if not self.tied or not kink:
            return False
        moved = [(i, k) for i, ks in direction.items() for k in ks if (i, k) in self.tied]
        entries = (moved + sorted(self.tied.difference(moved)))[:LIMITING_ENTRIES]
        offsets = [points.moved_by(self.arrays, {i: [k]}, sign * self.shift)
                   for i, k in entries for sign in (-1.0, 1.0)]
        ends = points.quotients_beside(self.ev, self.arrays, direction, h, offsets)
        for low, high in zip(ends[::2], ends[1::2]):
            lo, hi = _row(low[o], row), _row(high[o], row)
            tol = _tolerance(lo, hi, noise)
            if lo[0] - tol[0] <= value <= hi[0] + tol[0]:
                return True
        return False

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


def jumps(ev: Evaluator, real_inputs: list) -> set:
    """The outputs at ``ev``'s point that jump there (``beside.discontinuous``)."""
    p = ev.problem
    arrays = {i: to_real(p.arrays[i]) for i in real_inputs}
    ev = RealView(ev, real_inputs)
    eps = max([p.epsilon(out_idx=o) for o in p.float_out]
              + [p.epsilon(in_idx=i) for i in real_inputs])
    return points.surroundings(ev, arrays, real_inputs, eps)[1]


def tolerance_around(value: float, error: float) -> float:
    """The bracket's tolerance around one value known to ``error``."""
    return float(_tolerance(np.array([value]), np.array([value]), error)[0])


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


def _row(values, row: int) -> np.ndarray:
    """Entry ``row`` of a per-row array (a scalar: itself), as a 1-element array."""
    return np.atleast_1d(values)[row:row + 1] if np.ndim(values) else np.atleast_1d(values)


def _open(left, right, noise) -> bool:
    """Whether the one-sided derivatives differ: a kink or a tie."""
    low, high = np.minimum(left, right), np.maximum(left, right)
    return bool(np.any(high - low > _tolerance(low, high, noise)))
