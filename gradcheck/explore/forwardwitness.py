"""The forward's own second differences: the judge of a second-order explored
point whose first derivative is below the forward's rounding.

A second-order check differentiates the first derivative ``g = J^T v`` by
finite differences of its computed values. A formula fed the forward's
rounded results carries their rounding, which those differences do not see:
tan(z) at z = -29.4+26.8j is i to the last bit, so refengine's (and torch's)
1 + y*y, from the saved y, drops the real part of the derivative (1.4e-23,
where y's rounding is 1.1e-16), and its derivative 2 y (1 + y*y) moves by
9e-16 when y moves by one ulp. The second-order verdict there compared two
results of that rounding, 3e-23 apart, at a tolerance of 1e-31 (tanh at
-258+966j: 8e-225 apart). First order does not fail such a point: its
allowance for the AD values is the forward's rounding over the step
(``brackets``' noise, 64 eps |f| / h), and that covers the whole derivative
there.

So where a failing row of the first derivative lies within that same
allowance (first order could not tell it from 0: ``Witness.excuses``'s
gate), the second-order formula is judged by what the forward itself
resolves: the mixed second differences of ``phi = v . f`` along the row's
coordinate and the direction, at steps from 16 h up to the inputs' scale
(or 1), each Richardson-extrapolated and taken with its error (the
forward's rounding over the step squared, and the two steps' spread). A
step whose difference excludes the formula refutes it, and the failure
stands: the old refengine pow at an exponent of exactly 0, whose row there
is exactly 0 (the formula drops the derivative in p of the base's gradient,
1 / x: the forward's differences give 0.69 to 8e-6). Where no step refutes
it, nothing the forward computes tells the formula's value from the
quotients' (tan's: 0 to 3e-6 at the first step, to 7e-16 at a step of 8),
and the point is counted apart, not failed. The price: a formula wrong only
where the forward is flat to its rounding, by less than that rounding over
such steps, is not found there (it is where the forward moves).

This holds for engines whose vjp in real coordinates is the gradient of
``phi`` (``Re(conj(v) f)``: torch's and refengine's convention). Under
another, a sign of some rows differs: a resolved difference then refutes the
formula, and the failure stands as it did without this judge.
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.core.coords import from_real, to_real
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.problem import Problem
from adcheck.gradcheck.explore import beside as points
from adcheck.gradcheck.explore.brackets import tolerance_around

#: the rounding of each value of the forward, in units of eps of its output's largest
#: entry (the constant of the one-sided quotients' noise, ``brackets._noise_of``)
ROUNDING_ULPS = 64
#: the steps of the second differences: from ``FIRST`` times the judge's step up by
#: ``GROWTH`` to the inputs' scale (or 1), at most ``STEPS`` of them (tanh at |z| = 1000
#: takes 6; a point at 1e300 is not walked up to it call by call)
FIRST, GROWTH, STEPS = 16.0, 16.0, 6


class Witness:
    """The forward of a second-order check at one point, as the judge of the
    first derivative's failing rows (see the module docstring)."""

    def __init__(self, func, ins: list, first_ev: Evaluator, explored: list, eps: float):
        second = first_ev.problem
        first = second.source
        self.func, self.ins, self.explored, self.eps = func, ins, explored, eps
        #: by output of the first derivative: the function's input it is the gradient of
        self.input_of = {o: first.diff_in[k] for o, k in enumerate(first.used[0])} \
            if first.used else {}
        self.values = {o: to_real(a) for o, a in second.out_arrays.items()}
        self.grad_outputs = [second.arrays[first.primals + k]
                             for k in range(len(second.inputs) - first.primals)]
        self._ev = None

    def _forward(self):
        """The function's own evaluator at the point, made at the first row asked
        about (most failing points never reach the witness)."""
        if self._ev is None:
            ev = Evaluator(Problem(self.func, self.ins, warn_precision=False))
            p = ev.problem
            self.v = {o: to_real(g) for o, g in zip(p.diff_out, self.grad_outputs)}
            self.base = {o: to_real(p.out_arrays[o]) for o in self.v}
            self.scale = {o: float(np.max(np.abs(b), initial=0.0)) for o, b in self.base.items()}
            self.arrays = {i: to_real(p.arrays[i]) for i in self.explored}
            self.native = {i: (p.arrays[i].shape, p.arrays[i].dtype) for i in self.explored}
            self._ev = ev
        return self._ev

    def excuses(self, out_idx: int, row: int, direction: dict, formula: float) -> bool:
        """Whether the formula's ``formula`` (row ``row`` of the first derivative's
        output ``out_idx``, along ``direction``) is not judged here: that row is
        within the forward's rounding over the first-order step, and no second
        difference of the forward excludes the formula."""
        a = self.input_of.get(out_idx)
        if a not in self.explored or out_idx not in self.values or not np.isfinite(formula):
            return False
        try:
            self._forward()
        except Exception:    # noqa: BLE001 - no forward here: no witness
            return False
        coordinate = {a: [row]}
        peak = max([abs(float(self.arrays[a][row]))]
                   + [float(np.max(np.abs(self.arrays[i][ks]))) for i, ks in direction.items()])
        h = points.fd_step(peak, self.eps)
        witnessed, gated = False, False
        for k in range(STEPS):
            step = FIRST * GROWTH ** k * h
            if step > max(peak, 1.0):
                break
            found = self._extrapolated(coordinate, direction, step)
            if found is None:
                continue
            value, error, weight = found
            if not gated:
                # first order's allowance for this row: the forward's rounding over its step
                allowance = ROUNDING_ULPS * self.eps * weight / points.fd_step(
                    abs(float(self.arrays[a][row])), self.eps)
                if abs(float(self.values[out_idx][row])) > allowance:
                    return False    # the first derivative is resolved here: its quotients judge
                gated = True
            if abs(formula - value) > tolerance_around(value, error):
                return False        # the forward's own differences exclude the formula
            witnessed = True
        return witnessed

    def _extrapolated(self, coordinate: dict, direction: dict, step: float):
        """``(value, error, weight)``: the mixed second difference at ``step`` and
        ``step / 2`` extrapolated, its error, and the rounding weight of the values
        it takes (``_mixed``); None where the forward fails or is not finite."""
        try:
            coarse, weight_c = self._mixed(coordinate, direction, step)
            fine, weight_f = self._mixed(coordinate, direction, step / 2)
        except Exception:    # noqa: BLE001 - outside the domain at this step: no evidence
            return None
        if not (np.isfinite(coarse) and np.isfinite(fine)):
            return None
        weight = max(weight_c, weight_f)
        # (4 fine - coarse) / 3: the rounding of fine's (at step / 2: 4 R / step^2) and coarse's
        noise = ROUNDING_ULPS * self.eps * weight * (4 / 3 * 4 + 1 / 3) / step ** 2
        return (4 * fine - coarse) / 3, noise + abs(fine - coarse), weight

    def _mixed(self, coordinate: dict, direction: dict, step: float) -> tuple:
        """``(d, weight)``: the mixed second difference of ``phi`` along
        ``coordinate`` and ``direction`` at ``step``, and ``sum |v|`` over the
        outputs' entries it moves, each times its output's largest entry (all
        of one entry's worth where none moves: a forward flat to its rounding)."""
        total, moved = 0.0, {o: np.zeros(b.shape, dtype=bool) for o, b in self.base.items()}
        for first in (-1.0, 1.0):
            for second in (-1.0, 1.0):
                at = points.moved_by(points.moved_by(self.arrays, coordinate, first * step),
                                     direction, second * step)
                outs = self._evaluate(at)
                for o, v in self.v.items():
                    values = to_real(outs[o])
                    total += first * second * float(np.dot(v, values))
                    moved[o] |= values != self.base[o]
        weight = sum(self.scale[o] * float(np.sum(np.abs(self.v[o][moved[o]])))
                     for o in self.v)
        if weight == 0:
            weight = max(self.scale[o] * float(np.max(np.abs(v), initial=0.0))
                         for o, v in self.v.items())
        return total / (4 * step * step), weight

    def _evaluate(self, arrays: dict) -> dict:
        return self._ev.evaluate({i: from_real(a, *self.native[i]) for i, a in arrays.items()},
                                 "judging a second-order point by the forward's differences")
