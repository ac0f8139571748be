"""The checks beyond Jacobian agreement, each returning ``Result`` objects.

Reentrancy (the same vjp twice), scaling with grad_output (and of the jvp
with its tangent), undefined output gradients, batched gradients, gradient
dtypes, and outputs that were detached from their inputs. Each compares
through ``compare.compare`` and adds its own diagnosis; the checks that
apply to both AD modes are written once over a ``Side``.
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.core import budget as budgets, coords
from adcheck.gradcheck.engines import recompute
from adcheck.gradcheck.verdict.adjoint import ADJOINT_ULPS
from adcheck.gradcheck.verdict.compare import Result, compare, compare_jacobians
from adcheck.gradcheck.verdict.diagnosis import (NEAR_FLOAT32, cast_inside, integer_cause,
                                                  whole_numbers)
from adcheck.gradcheck.lowprec.lowprecision import U32
from adcheck.gradcheck.core.grids import narrow_grid
from adcheck.gradcheck.errors import GradcheckError
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.verdict.faults import repeat_rounding
from adcheck.gradcheck.core.jacobian import Jacobian
from adcheck.gradcheck.core.sides import SIDES, Side
from adcheck.gradcheck.core.coords import largest_finite
from adcheck.gradcheck.verdict.noise import MOVE_ULPS, MOVES, moved_vectors

#: the real factor grad_outputs and tangents are scaled by in the scaling check
SCALE = -2.5

#: the checks of the engine's batched products: check name, the call in words,
#: and the flag that turns the check off
BATCHED = {
    "reverse": ("batched-grad", "batched backward (is_grads_batched=True)",
                "check_batched_grad=False if the function does not support it"),
    "forward": ("batched-forward-grad", "batched forward AD (vmap over jvp)",
                "check_batched_forward_grad=False if the function does not support vmap"),
}


def reentrant(problem, first: Jacobian, second: Jacobian, nondet_tol: float) -> list:
    """Two runs of the same AD computation of ``problem`` must agree within
    ``nondet_tol``, and the rounding a low-precision formula's repeats may
    differ by relative to each entry (``faults.repeat_rounding``). The one rule
    of reentrancy, whatever the plan: whole Jacobians, projections, or a
    block's rows made in batches (``gradcheck.large.streamed``)."""
    results = compare_jacobians("reentrant", first, second, nondet_tol,
                                repeat_rounding(problem), explain=False, same_nonfinite=True)
    verb = SIDES[first.mode.removeprefix("fast-")].product
    for r in results:
        if r.passed:
            continue
        if np.isfinite(r.max_error):
            r.diagnosis = (f"nondeterministic: the same {verb} run twice differs by "
                           f"{r.max_error:.1e}; the formula uses randomness or state (if that "
                           f"is intended, set nondet_tol >= {r.max_error:.1e})")
        else:
            r.diagnosis = (f"nondeterministic: the same {verb} run twice gives NaN or inf one "
                           "time and another value the other time; the formula uses "
                           "randomness or state, or reads uninitialized memory")
    return results


def scaling_probes(ev: Evaluator, rng, sides: list) -> dict:
    """Draw the random vectors of the scaling check, by (mode, carrier index):
    each a block of two rows, the vector and ``SCALE`` times it.

    They are drawn before the Jacobians are built and prefetched, so the
    batched Jacobian producers compute their products too; unless they and
    their products outgrow a ``budget.HELD_SHARE`` of the budget (a convolution
    of a million inputs: 100 MB held through the whole check), when they are
    computed as the check runs (two more products, unbatched).
    """
    p = ev.problem
    probes = {}
    for side in sides:
        for idx in side.carriers(p):
            draw = rng.standard_normal((1, side.carrier_size(p.layout, idx)))
            vector = side.vectors(p, idx, draw)[0]
            pair = [vector, SCALE * vector]
            # (the pair as kept: ``scaling`` asks for that very block, found at once)
            probes[side.mode, idx] = ev.prefetch(side.product, idx, pair) \
                if _small(ev, side, idx) else np.stack(pair)
    return probes


def _small(ev: Evaluator, side: Side, idx: int) -> bool:
    """Whether two vectors on ``idx`` and their products may be held while the
    Jacobians are built (``budget.held``)."""
    p = ev.problem
    size = side.carrier_size(p.layout, idx) + sum(side.receiver_size(p.layout, r)
                                                  for r in side.receivers(p))
    return budgets.held(ev.budget, 2 * size)


def scaling(ev: Evaluator, probes: dict, epsilon: float, nondet_tol: float = 0.0,
            magnitudes=None) -> list:
    """The vjp is linear in grad_output, the jvp in the tangent (real scale).

    ``probes`` come from ``scaling_probes``. The tolerance is rounding
    (``ADJOINT_ULPS`` units of the results and of ``|v| * ||J||_F``, with
    ``magnitudes`` the blocks' Frobenius norms, for results that cancel to
    almost zero) plus the nondeterminism the caller allows (``nondet_tol``
    per evaluation).
    """
    p = ev.problem
    magnitudes = magnitudes or {}
    results = []
    # (a product on a narrower grid than the inputs' says the function computes there;
    # the inputs' grid is read only for a failure: a pass pays no pass over them)
    def grid() -> bool:
        return epsilon < 1e-15 and not p.inputs_on_a_grid()
    for (mode, idx), block in probes.items():   # (each: a vector, SCALE times it)
        side, vector = SIDES[mode], block[0]
        norm = (1 + abs(SCALE)) * coords.norm(coords.to_real(vector))
        pair = side.products(ev, idx, block, "checking scaling")
        for r in side.receivers(p):
            key = side.key(idx, r)
            rows = side.real_rows(p, r, pair[r], 2)
            floor = norm * magnitudes.get(key, 0.0)
            result = _scaled(side, key, rows[0], rows[1], epsilon, nondet_tol, floor, grid=grid)
            if not result.passed and not _rounded(rows[0], rows[1], SCALE * rows[0]):
                noise = product_noise(ev, side, idx, r, list(block), rows, epsilon)
                if noise:
                    again = _scaled(side, key, rows[0], rows[1], epsilon, nondet_tol, floor,
                                    NOISE_MARGIN * (1 + abs(SCALE)) * noise)
                    if again.passed:
                        result = again
                        result.detail = (f"within the rounding noise of the {side.product}: "
                                         f"it moves by {noise:.1e} when the {side.vector}s "
                                         f"move by up to {MOVE_ULPS} ulps")
            results.append(result)
    return results


#: how many times the measured noise of a product a scaling error may be
NOISE_MARGIN = 4.0


def product_noise(ev: Evaluator, side: Side, idx: int, r: int, vectors, values,
                  epsilon: float) -> float:
    """The rounding noise of ``side``'s products of ``vectors`` on ``idx``
    (receiver ``r``, ``values`` their real rows): how far each moves when its
    vector moves by a few ulps (``moved_vectors``), largest over the moves and
    the entries; 0.0 when it cannot be measured. A linear formula moves by that
    move times the Jacobian; a product that is zero in exact arithmetic
    (corrcoef of one variable is constant) is noise, and not linear."""
    moved = np.concatenate([moved_vectors(v, epsilon) for v in vectors])
    try:
        again = side.products(ev, idx, moved, "measuring the rounding of a product")
    except GradcheckError:
        return 0.0
    rows = side.real_rows(ev.problem, r, again[r], len(moved))
    with np.errstate(invalid="ignore"):
        change = np.abs(rows - np.repeat(values, MOVES, axis=0))
    return _largest(change)


def _largest(values: np.ndarray) -> float:
    return largest_finite(values)


def _scaled(side: Side, key, base, scaled, epsilon, nondet_tol, floor,
            noise: float = 0.0, grid=None) -> Result:
    """The scaling comparison of one pair; ``noise``: an absolute allowance for
    the product's measured rounding noise (``product_noise``); ``grid()``: whether
    a failing product on a narrower dtype's grid is named so (``diagnosis.narrow_grid``)."""
    expected = SCALE * base
    scale = np.abs(expected) + np.abs(scaled)
    largest = largest_finite(scale)
    tol = ADJOINT_ULPS * epsilon * (scale + largest + floor)   # (+ 0.0 changes no tol >= 0:
    tol = (tol + noise if noise else tol) + 1e-300                 # skipped, two array passes)
    tol = tol + (1 + abs(SCALE)) * nondet_tol if nondet_tol else tol
    # the same NaN or inf at both scales is linear enough here: the nonfinite check names it
    result = compare("scaling", side.mode, side.mode, *key, expected, scaled, tol,
                     same_nonfinite=True)
    if not result.passed:
        what, verb = side.vector, side.product
        if _rounded(base, scaled, expected):
            result.diagnosis = (
                f"the {verb} returns only whole numbers (for the {what} and for {SCALE} "
                f"times it), so it cannot scale by {SCALE}: {integer_cause(verb)}")
            return result
        narrow = narrow_grid(base) if grid is not None and grid() else None
        if narrow is not None:   # (a double-precision check: the product came through it)
            result.diagnosis = cast_inside(narrow, verb)
            return result
        relative = result.max_error / largest if largest > 0 else np.inf
        if U32 / 4 <= relative <= NEAR_FLOAT32:
            # (inputs of a float32 model widened lie on its grid, which hides the product's)
            result.diagnosis = (
                f"the {verb} scales with its {what} only to {relative:.0e} of its size, "
                f"float32's rounding: it computes in float32 inside (a float32 tensor it "
                f"multiplies by, kept from a float32 model, or a 0-dim {what} that does not "
                f"promote it), or it is an approximation accurate to about that")
            return result
        if relative < APPROXIMATE:
            result.diagnosis = (
                f"the {verb} scales with its {what} only to {relative:.0e} of its size: an "
                f"approximate {verb} whose accuracy depends on the {what} (an adaptive or "
                "iterative solver whose steps or stopping test it sets, as an adjoint ODE "
                "solver's), linear to the solver's tolerance, not to rounding")
            return result
        result.diagnosis = (f"not scaled by {what}: multiplying the {what} by {SCALE} does not "
                            f"multiply the {verb} by {SCALE}; the formula ignores the "
                            f"{what}, takes its abs(), or adds a term that does not multiply it")
    return result


#: a scaling error below this part of the products' size is an approximation's, not a
#: formula's (a formula that ignores its grad_output is off by the whole product)
APPROXIMATE = 1e-6


def _rounded(base, scaled, expected) -> bool:
    """Whether both products are whole numbers, not all zero, and off from
    linearity by no more than rounding (or truncating) each to an integer
    makes them (``1 + |SCALE|``): a rounded or integer gradient."""
    both = np.concatenate([base, scaled])
    with np.errstate(invalid="ignore"):
        gap = np.abs(scaled - expected)
    return (whole_numbers(both) and bool(np.all(np.isfinite(both)))
            and bool(np.all(gap <= 1 + abs(SCALE))))


def request_undefined_grad(ev: Evaluator) -> None:
    """Where undefined gradients are zeros (refengine, JAX), the undefined-grad
    check is the vjp of zeros: a zero row in each output's reverse batch, which
    runs that output's backward with every output gradient zero (the others
    take no part in it), so each output's part of the graph is run with zeros.
    Nothing is asked ahead when some output's rows are too large to hold
    (``_small``): the check then makes its own vjp of zeros."""
    p = ev.problem
    if p.engine.supports_undefined_grad or not all(_small(ev, SIDES["reverse"], o)
                                                   for o in p.diff_out):
        return
    rows = {}
    for o in p.diff_out:
        out = p.out_arrays[o]   # (its block, kept to be asked for as it is)
        rows[o] = ev.prefetch("vjp", o, np.zeros((1, *out.shape), out.dtype))
    ev.memo["undefined zeros"] = rows


def undefined_grad(ev: Evaluator) -> list:
    """With every output gradient undefined (or zero), input gradients are zero."""
    p = ev.problem
    what = "checking undefined output gradients"
    try:
        if p.engine.supports_undefined_grad:
            grads = _undefined_vjp(ev)
        elif "undefined zeros" in ev.memo:   # prefetched by request_undefined_grad
            per_output = [ev.vjps(o, block, what) for o, block in
                          ev.memo.pop("undefined zeros").items()]
            grads = [_nonzero_first([None if s.get(i) is None else s[i][0] for s in per_output])
                     for i in p.diff_in]
        else:
            zeros = {o: np.zeros_like(p.out_arrays[o]) for o in p.diff_out}
            grads = list(ev.vjp(zeros, what).values())
    except Exception as exc:
        cause = exc.__cause__ if isinstance(exc, GradcheckError) and exc.__cause__ else exc
        return [Result("undefined-grad", "reverse", "zero", None, None, False,
                       diagnosis=f"the backward raised {type(cause).__name__} ({cause}) when its "
                       "output gradients were undefined; it must accept None/zero grads")]
    return [_undefined_result(in_idx, array) for in_idx, array in zip(p.diff_in, grads)]


def _nonzero_first(arrays: list):
    """Of one input's gradients from each output's zero row, one that is not all
    zero (NaN counts as nonzero) if any, else the first; None if all are None."""
    found = [a for a in arrays if a is not None]
    return next((a for a in found if np.count_nonzero(a)), found[0] if found else None)


def _undefined_vjp(ev: Evaluator) -> list:
    """Gradients with every output's gradient undefined, on an engine that has them."""
    p, E = ev.problem, ev.problem.engine
    outs = [p.outputs[o] for o in p.diff_out]
    zeros = [p.like_output(o, np.zeros_like(p.out_arrays[o])) for o in p.diff_out]
    p.counts["vjp"] += 1
    undefined = [E.undefined_grad(o) for o in outs]
    recompute.inherit(undefined, outs)
    grads = E.grad(undefined, [p.inputs[i] for i in p.diff_in], zeros)
    return [None if g is None else E.to_numpy(g) for g in grads]


def _undefined_result(in_idx: int, array) -> Result:
    found = np.zeros((1, 0)) if array is None else np.asarray(array).reshape(1, -1)
    if found.size and not np.count_nonzero(found):   # (.any(): a Python frame more)
        # exact zeros (NaN counts as nonzero): compare's own result, without its passes
        return Result("undefined-grad", "reverse", "zero", None, in_idx, True, 0.0, (0, 0),
                      0.0, np.zeros_like(found), found)
    result = compare("undefined-grad", "reverse", "zero", None, in_idx, np.zeros_like(found),
                     found, 0.0)
    if not result.passed:
        if not np.all(np.isfinite(found)):
            # (0 times a NaN or inf factor: every term may well multiply grad_output)
            result.diagnosis = ("with all output gradients zero the backward returns NaN or "
                                "inf: a factor of its formula is NaN or inf at these inputs "
                                "(0/0, log(0)), and zero times it is NaN; the check of the "
                                "Jacobian says where")
        else:
            result.diagnosis = ("with all output gradients undefined or zero the backward "
                                "returns a nonzero gradient: it adds a term that does not "
                                "multiply grad_output")
    return result


def grad_dtypes(ev: Evaluator) -> list:
    """Each vjp gradient has its input's dtype, each tangent its output's."""
    p = ev.problem
    results = []
    for out_idx in p.diff_out:
        grads = ev.vjp({out_idx: np.ones_like(p.out_arrays[out_idx])}, "checking gradient dtypes")
        for in_idx, g in grads.items():
            expected = p.arrays[in_idx].dtype
            ok = g is None or g.dtype == expected
            results.append(Result("grad-dtype", "reverse", "input", out_idx, in_idx, ok,
                                  diagnosis=None if ok else
                                  f"the gradient has dtype {g.dtype} but input {in_idx} has "
                                  f"dtype {expected}"))
    return results


def batched_products(ev: Evaluator, side: Side, rng, atol: float, rtol: float,
                     batch: int = 2) -> list:
    """The engine's batched product (``grad(..., is_grads_batched=True)`` in
    reverse mode, vmap over a jvp in forward mode) equals one product per
    batch entry."""
    p = ev.problem
    check, call, flag = BATCHED[side.mode]
    results = []
    for idx in side.carriers(p):
        draws = rng.standard_normal((batch, side.carrier_size(p.layout, idx)))
        vectors = [side.vectors(p, idx, row[None])[0] for row in draws]
        singles = [side.single(ev, idx, v) for v in vectors]
        try:
            stacked = ev.engine_batch(side.product, idx, np.stack(vectors))
        except Exception as exc:
            raise GradcheckError(f"{p.name}: {call} raised {type(exc).__name__} ({exc}); "
                                 f"pass {flag}") from exc
        for r in side.receivers(p):
            expected = np.concatenate([side.real_rows(p, r, None if s[r] is None else s[r][None], 1)
                                       for s in singles])
            found = side.real_rows(p, r, stacked[r], batch)
            # a batched kernel may reduce in another order: in low precision that is
            # a few roundings of the largest product, as between two runs
            result = compare(check, f"batched-{side.mode}", side.mode, *side.key(idx, r),
                             expected, found, atol + rtol * np.abs(expected)
                             + repeat_rounding(p) * _largest(np.abs(expected)))
            if not result.passed:
                result.diagnosis = (f"the batched {side.product} differs from one "
                                    f"{side.product} per batch entry: the formula mixes batch "
                                    "entries or ignores the batch dimension")
            results.append(result)
    return results


def detached(ev: Evaluator, numerical: Jacobian, atol: float) -> list:
    """Outputs that do not require grad must not depend on the inputs."""
    p = ev.problem
    return [detached_result(o, i, numerical[o, i], atol)
            for o in p.float_out if o not in p.diff_out for i in p.diff_in]


def detached_result(out_idx: int, in_idx: int, block: np.ndarray, atol: float) -> Result:
    """Output ``out_idx``, which does not require grad, against zero: ``block``
    holds its numerical derivatives by input ``in_idx`` (or, of a block seen in
    chunks, its largest entry)."""
    result = compare("detached", "numerical", "zero", out_idx, in_idx,
                     np.zeros_like(block), block, atol)
    if not result.passed:
        result.diagnosis = (
            f"output {out_idx} does not require grad, yet it depends on input "
            f"{in_idx}: the function detaches it from the graph (.detach(), .numpy(), "
            "no_grad, or a Function that marks it non-differentiable); if it is "
            "declared non-differentiable on purpose, pass check_detached=False")
    return result

