"""Probed Jacobians of a low-precision formula: the rounding allowance carried through ``U``.

A second-order check of a float32, bfloat16 or float16 formula judged on
whole Jacobians (``gradcheck.lowprec.widening``) extrapolates every input coordinate
of the first derivative, takes second differences along each, and measures
the formula's rounding on four whole reverse-mode Jacobians per precision:
most of an op_db sweep's time. Asked for ``jacobian="probed"``, it compares
``k`` random directions instead, as the double-precision probed check does
(``gradcheck.large.probed``), with the same allowance for the formula's rounding
(``gradcheck.lowprec.lowprecision``), carried through the directions:

- the directions ``S`` (Gaussian, scaled per coordinate as the steps are)
  are rounded to the input's dtype after normalising each to a largest
  entry of at most 1 by a power of two, so that the formula, which can only
  take tangents in its dtype, and the float64 differences move along
  exactly the same ``S`` (float16 has no room for steps of 1e-6);
- the expected cells ``J S``: Richardson extrapolation along each direction
  on the function's float64 run (``gradcheck.lowprec.widening.widened``), with its
  error estimate;
- the allowance of a cell: ``allowance @ |S|``, the per-entry allowance of
  terms 1 to 4 (``lowprecision.allowance``, its ``|J|`` and row supports read
  from the float64 run's reverse-mode Jacobian, one batch of vjps: no
  extrapolation) pushed through the directions' magnitudes, which bounds
  the rounding of a sum of ``J_rc S_cj`` terms by the sum of each term's;
  plus, in place of terms 5 and 6 (the saved outputs' rounding, the second
  order's cancellations), the cells' own rounding measured as
  ``gradcheck.lowprec.adrounding`` measures it on whole Jacobians: the spread, over
  ``point_count`` nearby points, of the low-precision cells' distance to the
  float64 run's, for the forward cells and the reverse scalars ``W^T A S``
  alike (``MARGIN`` times each), each point along its own slightly moved
  directions (``_nudged_plans``: the rounding of a jvp's arithmetic on them).

What it can miss is stated as the double-precision probed check states it
(``gradcheck.large.probed.escape_odds``), for an entry wrong by
``stated_relative`` of its row (32 times the allowance's relative part): the
tolerance of a cell is the whole allowance of its row, so one wrong entry of
a row of ``n`` terms is resolved about ``sqrt(n)`` times more coarsely than
by the dense check; a formula wrong throughout (a factor, a sign) moves
every cell and is caught as surely.
"""
from __future__ import annotations

import time
import warnings

import numpy as np

from adcheck.gradcheck.core import coords
from adcheck.gradcheck.lowprec.adrounding import NUDGE, nearby_points, point_spread
from adcheck.gradcheck.core.analytical import ad_blocks
from adcheck.gradcheck.large.cells import seeded_forward, seeded_numerical
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.jacobian import Jacobian
from adcheck.gradcheck.lowprec.lowprecision import (
    KERNEL_ULPS,
    MARGIN,
    U32,
    allowance,
    formula_dtype,
    formula_epsilon,
    forward_rounding,
    sum_units,
)
from adcheck.gradcheck.numerics.precision import Precision
from adcheck.gradcheck.numerics.scheme import Extrapolated
from adcheck.gradcheck.large.probed import ProbePlan, probe_plan, probed_reverse
from adcheck.gradcheck.core.problem import Problem
from adcheck.gradcheck.core.reuse import kept
from adcheck.gradcheck.large.seeds import Probes
from adcheck.gradcheck.large.lowstacked import stacked_forward
from adcheck.gradcheck.core.sides import REVERSE

#: the spacing of each dtype's subnormal numbers (its absolute rounding below
#: its smallest normal number)
SUBNORMAL_SPACING = {"float16": 2.0 ** -24, "complex32": 2.0 ** -24, "bfloat16": 2.0 ** -133,
                     "float32": 2.0 ** -149, "complex64": 2.0 ** -149}
#: the relative error the report states escape odds for, in units of the
#: allowance's relative part (``MARGIN * (u + KERNEL_ULPS * U32)``)
STATED_ALLOWANCES = 32


def stated_relative(epsilon: float) -> float:
    """The relative size of a wrong entry a low-precision probed check states
    its escape odds for: ``STATED_ALLOWANCES`` times the allowance's relative
    part (0.38 in bfloat16, 0.05 in float16, 5e-5 in float32)."""
    return STATED_ALLOWANCES * MARGIN * (epsilon / 2 + KERNEL_ULPS * U32)


def rounded_plan(ev: Evaluator, rng, k: int) -> tuple:
    """``(plan, scales)``: a probe plan whose directions are exact in each input's
    dtype, each direction normalised by a power of two; ``scales[i]`` (``k``
    powers of two) restores the step sizes of extrapolation's ``direction_scale``."""
    plan = probe_plan(ev, rng, k, Extrapolated())
    scales = {}
    for i, seeds in plan.seeds.items():
        vectors = seeds.vectors
        top = np.max(np.abs(vectors), axis=1, initial=0.0)
        scale = 2.0 ** np.ceil(np.log2(np.where(top > 0, top, 1.0)))
        plan.seeds[i] = _in_dtype(ev.problem, i, vectors / scale[:, None])
        scales[i] = scale
    return plan, scales


def _in_dtype(p: Problem, i: int, vectors: np.ndarray) -> Probes:
    """Directions (real rows) for input ``i`` rounded to its dtype."""
    wide_dtype = np.complex128 if np.iscomplexobj(p.arrays[i]) else np.float64
    arrays = coords.from_real_rows(vectors, p.arrays[i].shape, wide_dtype)
    exact = p.engine.to_numpy(p.like_input(i, arrays))
    return Probes(coords.to_real_rows(exact).reshape(len(vectors), -1))


def probed_low_numerical(ev: Evaluator, plan: ProbePlan, scales: dict, wide: Problem,
                         sides: tuple) -> Jacobian:
    """``J S`` from the float64 run ``wide``, with ``errors``, the cells'
    ``allowance`` and, for ``sides`` containing reverse, the allowance of the
    projected scalars (``projected_allowance``); see the module docstring."""
    p = ev.problem
    start = time.perf_counter()
    stepped = {i: Probes(s.vectors * scales[i][:, None]) for i, s in plan.seeds.items()}
    wide_ev = Evaluator(wide)
    jac = seeded_numerical(wide_ev, stepped, Extrapolated(), "probed",
                           f"finite differences (float64 run) of J U for {plan.k} Gaussian "
                           "directions")
    for key in list(jac.blocks):
        undo = 1.0 / scales[key[1]][None, :]
        jac.blocks[key] = jac.blocks[key] * undo
        jac.errors[key] = jac.errors[key] * undo
    jac.seeds = plan.seeds
    jac.allowance = _cell_allowance(ev, wide, plan)
    for key, block in jac.blocks.items():   # an output no vjp reaches: measured only
        jac.allowance.setdefault(key, np.zeros_like(block))
    forward, reverse = measured_cells(ev, plan, sides)
    terms = dict(jac.allowance)
    for key, spread in forward.items():
        jac.allowance[key] = jac.allowance[key] + MARGIN * pooled(spread, terms[key], axis=1)
    if reverse:
        jac.projected_allowance = {
            (o, i): MARGIN * pooled(spread, np.abs(plan.rows[o]) @ terms[o, i], axis=None)
            for (o, i), spread in reverse.items() if o in plan.rows}
    complex_ = any(np.iscomplexobj(a) for a in (*wide.arrays.values(), *wide.out_arrays.values()))
    jac.precision = Precision(formula_dtype(p), "complex128" if complex_ else "float64",
                              f"Richardson extrapolation along {plan.k} directions")
    jac.counts = {"function": wide.counts["function"]}
    jac.seconds = time.perf_counter() - start
    p.counts["function"] += wide.counts["function"]
    return jac


def pooled(spread: np.ndarray, scale: np.ndarray, axis) -> np.ndarray:
    """The measured spread, each cell at least its ``scale`` times the largest
    ratio of spread to scale along ``axis`` (a row's directions; ``None``: the
    block). Four points measure one cell's rounding roughly (atan2 float16 at
    a scalar: a quarter of what the dense check's points found); the cells of
    a row share the formula's rounding relative to their terms, so the row's
    eight directions together measure it better."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(scale > 0, spread / scale, 0.0)
    ratio = np.nan_to_num(ratio, nan=0.0, posinf=0.0)
    top = np.max(ratio, axis=axis, keepdims=axis is not None, initial=0.0)
    # a cell whose terms are unbounded (the float64 run's AD is NaN or inf in its
    # row) has an infinite allowance already: a row that measured no spread must
    # not turn it into 0 * inf = NaN, which fails every comparison
    # (masked.logaddexp's second order at masked coordinates)
    with np.errstate(invalid="ignore"):
        scaled = np.where(top > 0, top * scale, 0.0)
    return np.maximum(spread, scaled)


def _cell_allowance(ev: Evaluator, wide: Problem, plan: ProbePlan) -> dict:
    """Terms 1 to 4 per entry, from the float64 run's reverse-mode Jacobian,
    pushed through ``|S|``: one cell's allowance per block. The entries' part
    draws no directions: the second-order checks of one sample share it
    (``reuse.kept``)."""
    problem = ev.problem
    exact, entries = entry_allowance(ev, wide)
    spacing = SUBNORMAL_SPACING.get(formula_dtype(problem), 0.0)
    cells = {}
    for (o, i), block in entries.items():
        if i in plan.seeds:
            # an entry the formula never computes (an exact zero of the float64
            # run: elementwise, a band) adds no rounding to a jvp or a vjp
            computed = exact.blocks[o, i] != 0
            cells[o, i] = np.where(computed, block, 0.0) @ np.abs(plan.seeds[i].vectors).T
            # a term J_rc S_c below the dtype's smallest normal (float16 from 6e-5) is
            # rounded to a fixed spacing, not relative: half of it per product and sum
            terms = np.sum(computed, axis=1, keepdims=True)
            cells[o, i] = cells[o, i] + spacing * (terms + 1)
    return cells


def entry_allowance(ev: Evaluator, wide: Problem) -> tuple:
    """``(exact, entries)``: the float64 run's reverse-mode Jacobian and the
    allowance of terms 1 to 4 of each of its entries, by block (made once for
    the second-order checks of a sample: ``reuse.kept``)."""
    problem = ev.problem
    (exact, entries), reused = kept(ev, ("low-precision allowance of each entry",),
                                    lambda: _entry_allowance(problem, wide))
    if not reused:
        problem.counts["vjp"] += exact.counts.get("vjp", 0)
    return exact, entries


def _entry_allowance(problem: Problem, wide: Problem) -> tuple:
    """``(exact, entries)``: the float64 run's reverse-mode Jacobian and the
    allowance of terms 1 to 4 of each of its entries."""
    exact = ad_blocks(Evaluator(wide), REVERSE)
    relative, _ = forward_rounding(problem, wide)
    return exact, allowance(exact, formula_epsilon(problem), relative, None,
                            sum_units(problem, wide))


def measured_cells(ev: Evaluator, plan: ProbePlan, sides: tuple) -> tuple:
    """``(forward, reverse)``: per block, the spread over ``point_count`` nearby points
    of the low-precision forward cells' (``A S``) and reverse scalars'
    (``W^T A S``) distance to the float64 run's; ``{}`` for a side not in
    ``sides`` or when a point cannot be evaluated in both precisions (then
    the cell allowance of terms 1 to 4 stands alone)."""
    problem = ev.problem
    wanted = [m for m in ("forward", "reverse") if m in sides]
    differences = {m: [] for m in wanted}
    from adcheck.gradcheck.lowprec.widening import widened
    points, reused = kept(ev, ("nearby points of the formula and its float64 run",),
                          lambda: nearby_points(problem, formula_epsilon(problem), widened))
    if points is None:
        return {}, {}
    plans = _nudged_plans(problem, plan, len(points))
    stacked = _stacked_cells(points, plans) if "forward" in wanted else None
    for n, (low, wide) in enumerate(points):
        # (a point another check made counts only what this one evaluates there)
        before = low.counts["function"] + wide.counts["function"] if reused else 0
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for mode in wanted:
                    if mode == "forward" and stacked is not None:
                        a, b = stacked[0][n], stacked[1][n]
                    else:
                        a, b = (_cells(mode, Evaluator(q), plans[n]).blocks
                                for q in (low, wide))
                    differences[mode].append({key: a[key] - b[key] for key in a})
        except Exception:  # noqa: BLE001 - no derivative there: nothing is measured
            return {}, {}
        problem.counts["function"] += low.counts["function"] + wide.counts["function"] - before
    return tuple(point_spread(differences.get(m, [])) for m in ("forward", "reverse"))


def _nudged_plans(problem: Problem, plan: ProbePlan, count: int) -> list:
    """One plan per nearby point: ``plan``'s directions, and its Gaussian rows,
    each entry moved by a relative ``NUDGE`` (at least 4 units of the dtype) of
    random sign, the directions rounded to the inputs' dtype as
    ``rounded_plan``'s are. A jvp's or vjp's own arithmetic on its directions
    rounds too, by what the directions are, not the point: trapezoid's forward
    over reverse takes ``v/2 (S_2 - S_1) + v/2 (S_1 - S_0)``, whose exact sum has
    no ``S_1`` term, so ``|J| |S|`` does not bound it (float16: 1.4e-4 off against
    an allowance of 9.4e-5). Along the same directions at every point that
    rounding is the same and shows no spread; along nudged ones it does. An
    entry below the dtype's smallest normal number moves by 4 of its subnormal
    spacings too: a relative nudge rounds back to it, and there a tangent's
    products round by that absolute spacing, which later factors multiply
    (logit's in float16, by 1 / (x (1 - x))^2)."""
    rng = np.random.default_rng(1)
    step = max(NUDGE, 4 * formula_epsilon(problem))
    tiny = 4 * SUBNORMAL_SPACING.get(formula_dtype(problem), 0.0)

    def nudged(vectors):
        signs = rng.choice([-1.0, 1.0], size=vectors.shape)
        return vectors * (1 + step * signs) + tiny * signs
    return [ProbePlan({i: _in_dtype(problem, i, nudged(s.vectors)) for i, s in plan.seeds.items()},
                      plan.rows if plan.exact else {o: nudged(w) for o, w in plan.rows.items()},
                      plan.exact)
            for _ in range(count)]


def _stacked_cells(points: list, plans: list) -> tuple | None:
    """``(low, wide)``: the forward cells at every point in each precision, each
    along its own plan's directions (``plans``), from one call per input
    (``gradcheck.large.lowstacked``), or ``None``: then one call per point."""
    seeds = [plan.seeds for plan in plans]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            low = stacked_forward([q for q, _ in points], seeds)
            wide = None if low is None else stacked_forward([q for _, q in points], seeds)
    except Exception:  # noqa: BLE001 - the points one at a time say what fails
        return None
    return None if wide is None else (low, wide)


def _cells(mode: str, ev: Evaluator, plan: ProbePlan) -> Jacobian:
    if mode == "forward":
        return seeded_forward(ev, plan.seeds, "probed", "")
    return probed_reverse(ev, plan)
