"""The in-dtype producer: a low-precision function differenced in its own dtype.

A function that does not run in float64 (a kernel that only exists in
float32; see ``gradcheck.lowprec.widening`` for how that is found out) is
differenced where it lives. Three things differ from Richardson
extrapolation in float64 (``gradcheck.numerics.richardson``, whose tableau and error
estimate are reused):

- *Steps for the dtype.* With unit roundoff ``u``, a central difference at
  step ``h`` has truncation error ``~ h**2`` and rounding error ``~ u / h``;
  the best plain step is ``~ u**(1/3)`` times the coordinate's scale (4e-3 in
  float32, 0.16 in bfloat16), and each Richardson column allows a larger
  one. So the steps run from a quarter of the scale down to an eighth of
  ``u**(1/3)`` times it, in powers of two: 9 levels in float32, 4 in
  bfloat16, 5 in float16.
- *Steps that exist.* ``x + h`` is rounded to the dtype; the difference is
  taken over the steps actually made, ``(f(x+) - f(x-)) / (x+ - x-)``, both
  exact in float64.
- *Measured noise.* The function's rounding noise is measured, not assumed:
  it is evaluated at 9 equispaced points a few ulps apart along one line
  through the input, and the noise level of each output coordinate is read
  from the higher differences of those values (Hamming's method, as in
  Moré and Wild's ECnoise: the ``j``-th differences of noise of standard
  deviation ``s`` have mean square ``s**2 (2j)! / (j!)**2``). Each function
  value is then trusted to ``max(3 s, 4 u |f|)``, and the tableau propagates
  that through every extrapolation.

The Jacobian carries ``errors`` (the tableau's estimate, noise included),
the ``allowance`` for the analytical side's rounding (``lowprecision``,
without the terms that need a float64 run) and its ``precision``: the
comparison's resolution is bounded by the differences' own error, about
``u**(2/3)`` relative at best (1e-5 in float32, 3e-2 in bfloat16).
"""
from __future__ import annotations

import math
import time

import numpy as np

from adcheck.gradcheck.core import coords
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.jacobian import Jacobian
from adcheck.gradcheck.lowprec.lowprecision import allowance, formula_dtype, formula_epsilon
from adcheck.gradcheck.errors import UncheckableError
from adcheck.gradcheck.numerics.precision import Precision
from adcheck.gradcheck.numerics.richardson import extrapolate

#: the smallest magnitude a coordinate's steps are relative to
FLOOR = 2.0 ** -6
#: points on the line the noise is measured on, and the differences read
NOISE_POINTS = 9
NOISE_ORDERS = (3, 4, 5, 6)
#: a function value is trusted to this many standard deviations of its noise,
#: and to this many units of roundoff of itself at least
NOISE_SIGMAS = 3.0
NOISE_FLOOR_U = 4.0


def levels(epsilon: float) -> int:
    """How many step sizes a dtype of machine epsilon ``epsilon`` gets: from a
    quarter of the scale down to ``u**(1/3) / 8`` of it."""
    smallest = (epsilon / 2) ** (1 / 3) / 8
    return max(3, math.ceil(-math.log2(smallest)) - 2)


def _exact(ev: Evaluator, in_idx: int, rows: np.ndarray) -> tuple:
    """Points (rows of real coordinates, in float64) rounded to input ``in_idx``'s
    dtype: ``(their real coordinates, the arrays the evaluator takes)``."""
    p = ev.problem
    base = p.arrays[in_idx]
    wide = np.complex128 if np.iscomplexobj(base) else np.float64
    arrays = p.engine.to_numpy(p.like_input(in_idx, coords.from_real_rows(rows, base.shape,
                                                                           wide)))
    return coords.to_real_rows(arrays), arrays


def _noise(ev: Evaluator, in_idx: int, x: np.ndarray, epsilon: float) -> dict:
    """The trusted accuracy of each output real coordinate's value, by output
    (see the module docstring)."""
    p = ev.problem
    scale = np.maximum(np.abs(x), FLOOR)
    spacing = 2.0 ** (np.floor(np.log2(scale)) + 2) * epsilon
    k = np.arange(NOISE_POINTS) - NOISE_POINTS // 2
    _, arrays = _exact(ev, in_idx, x[None, :] + k[:, None] * spacing[None, :])
    outs = ev.outputs_at(in_idx, arrays, f"measuring the rounding noise of input {in_idx}",
                         f"measuring rounding noise at point {{k}} of input {in_idx}",
                         tolerant=True)
    noise = {}
    for o, values in outs.items():
        f = coords.to_real_rows(values)
        sigma = np.zeros(f.shape[1])
        for j in NOISE_ORDERS:
            gamma = math.factorial(j) ** 2 / math.factorial(2 * j)
            diffs = np.diff(f, n=j, axis=0)
            sigma = np.maximum(sigma, np.sqrt(np.mean(diffs ** 2, axis=0) * gamma))
        floor = NOISE_FLOOR_U * epsilon / 2 * np.max(np.abs(f), axis=0)
        noise[o] = np.nan_to_num(np.maximum(NOISE_SIGMAS * sigma, floor), nan=np.inf)
    return noise


def _columns(ev: Evaluator, in_idx: int, epsilon: float) -> dict:
    """``(value, error)`` per output, each (coordinates, output real size), for
    every real coordinate of input ``in_idx``."""
    p = ev.problem
    x = coords.to_real(p.arrays[in_idx])
    n = x.size
    if n == 0:
        return {o: (np.zeros((0, p.layout.out_size(o))),) * 2 for o in p.float_out}
    top = 2.0 ** (np.floor(np.log2(np.maximum(np.abs(x), FLOOR))) - 2)
    steps = top[None, :] * 2.0 ** -np.arange(levels(epsilon))[:, None]
    moved = np.broadcast_to(x, (2, len(steps), n, n)).copy()
    for sign, side in ((1, 0), (-1, 1)):
        moved[side][:, np.arange(n), np.arange(n)] += sign * steps
    real, arrays = _exact(ev, in_idx, moved.reshape(-1, n))
    made = real.reshape(2, len(steps), n, n)[:, :, np.arange(n), np.arange(n)]
    span = made[0] - made[1]                                    # (levels, n)
    outs = ev.outputs_at(in_idx, arrays, f"taking differences in the dtype for input {in_idx}",
                         f"computing finite differences for input {in_idx}", tolerant=True)
    noise = _noise(ev, in_idx, x, epsilon)
    result = {}
    for o, values in outs.items():
        f = coords.to_real_rows(values).reshape(2, len(steps), n, -1)
        diffs = [(f[0, k] - f[1, k]) / span[k][:, None] for k in range(len(steps))]
        noises = [np.broadcast_to(2 * noise[o][None, :] / span[k][:, None], diffs[k].shape)
                  for k in range(len(steps))]
        result[o] = extrapolate(diffs, noises)
    return result


def in_dtype_blocks(ev: Evaluator, why: str | None = None) -> Jacobian:
    """The numerical Jacobian of ``ev``'s low-precision problem by differences in
    its own dtype, with ``errors``, ``allowance`` and ``precision`` (``why``:
    why the function was not run in float64)."""
    p = ev.problem
    start, before = time.perf_counter(), p.counts["function"]
    epsilon = formula_epsilon(p)
    dtype = formula_dtype(p)
    jac = Jacobian("numerical", p.layout, errors={})
    for in_idx in p.diff_in:
        for o, (best, err) in _columns(ev, in_idx, epsilon).items():
            jac.blocks[o, in_idx], jac.errors[o, in_idx] = best.T.copy(), err.T.copy()
    jac.allowance = allowance(jac, epsilon)
    note = f"differenced in {dtype} because {why}" if why else None
    jac.precision = Precision(dtype, dtype, "Richardson extrapolation", note=note)
    jac.counts = {"function": p.counts["function"] - before}
    jac.seconds = time.perf_counter() - start
    return jac


def refuse_unresolved(problem, numerical: Jacobian, tolerances: dict, results: list) -> None:
    """Raise ``UncheckableError`` when ``numerical`` was differenced in a narrow
    dtype and resolved nothing: every nonzero entry within its own tolerance,
    so that no error in the formula could have failed, and none did.

    Differences in bfloat16 carry errors of about ``u**(2/3)``, 3 %, and a
    tolerance is several times the estimate: on a small square's Jacobian
    every entry's tolerance exceeded the entry, and a vjp wrong by half passed.
    A check that cannot fail is no pass."""
    precision = numerical.precision
    if precision is None or precision.numerical != precision.formula or \
            not precision.narrow or any(not r.passed for r in results):
        return   # (differences in a wider dtype, or a reference: entries resolve)
    judged = False
    for key, tol in tolerances.items():
        values = np.abs(numerical.complex_form(*key))
        if not np.any(values > 0):
            continue   # (a zero block is judged absolutely: any AD entry above its tolerance)
        if np.any(values > tol):
            return
        judged = True
    if judged:
        dtype = precision.numerical
        raise UncheckableError(
            f"{problem.name}: {precision.note or f'differenced in {dtype}'}, and differences in "
            f"{dtype} resolve nothing here: every entry's tolerance (their error estimate) is "
            f"as large as the entry, so no error in the formula could fail; judge it against "
            f"a float64 reference instead: kernels.check(func, inputs, against=reference), "
            f"or adcheck check FILE:FUNC --against FILE:REFERENCE (docs/kernels.md)")
