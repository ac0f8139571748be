"""The wider-precision producer: a low-precision function's Jacobian in float64.

When the function is checked in float32, bfloat16 or float16, its formula is
judged against the same function at the same values in double precision:
``widened`` converts every floating point input exactly to float64 (complex
ones to complex128: every narrower number is a float64 number) and runs the
function again. It *accepts* double precision when that run succeeds and
gives the same outputs (indices, shapes) in float64 or complex128; a function
that raises, or returns a narrower dtype (a kernel that only exists in
float32, or one that casts its input down), does not, and is differenced in
its own dtype instead (``gradcheck.lowprec.indtype``).

``wide_blocks`` is the producer: Richardson extrapolation on the float64 run
(``gradcheck.numerics.richardson``, with its error estimate), plus what the tolerance
model of ``gradcheck.lowprec.lowprecision`` reads from the two runs: how much the
forward lost to rounding, and the second derivatives along each input
coordinate (one more pair of float64 evaluations per coordinate).
"""
from __future__ import annotations

import time
import warnings

import numpy as np

from adcheck.gradcheck.core import coords
from adcheck.gradcheck.lowprec.adrounding import measured_rounding
from adcheck.gradcheck.errors import GradcheckError, UncheckableError
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.jacobian import Jacobian
from adcheck.gradcheck.lowprec.kinks import kink_allowance
from adcheck.gradcheck.lowprec.lowprecision import (
    INPUT_ROUNDING,
    MARGIN,
    allowance,
    formula_dtype,
    formula_epsilon,
    forward_rounding,
    output_terms,
    sum_units,
)
from adcheck.gradcheck.numerics.precision import Precision
from adcheck.gradcheck.core.problem import Problem
from adcheck.gradcheck.numerics.richardson_jacobian import richardson_blocks

#: the second differences' step, relative to a coordinate's magnitude
CURVATURE_STEP = 2.0 ** -10
#: the smallest magnitude a step is relative to (as Richardson's first step)
FLOOR = 2.0 ** -6
#: a second difference is trusted where its step moves the derivative by at most
#: this fraction of itself; else the step shrinks by ``REFINE``, up to ``LEVELS`` times
LOCAL = 1.0 / 8
REFINE = 8.0
LEVELS = 3


def widened(problem: Problem) -> tuple:
    """``(Problem, None)``: ``problem``'s function at its inputs in double
    precision; or ``(None, reason)`` when the function does not accept them."""
    E = problem.engine
    if _draws_random(problem):
        # a float64 run draws other random numbers (fractional max pooling's
        # regions move): another function, whatever the seed; and differences in
        # the dtype itself of such a piecewise function gave 0.5 for 1 in float16
        raise UncheckableError(
            f"{problem.name}: the function draws random numbers, so its float64 run is "
            "another function (other draws, even after the same seed), and finite "
            f"differences in {E.dtype_name(problem.inputs[problem.diff_in[0]])} cannot "
            "judge it; check it in float64, where every step repeats the same draw")
    inputs = tuple(E.widened(x) if E.is_tensor(x) and E.is_differentiable_dtype(x) else x
                   for x in problem.inputs)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            wide = Problem(problem.source, inputs, problem.name, order=problem.order,
                           warn_precision=False)
    except Exception as exc:  # noqa: BLE001 - any refusal means: difference it in its dtype
        cause = exc.__cause__ if isinstance(exc, GradcheckError) and exc.__cause__ else exc
        text = " ".join(str(cause).split())[:160]
        return None, f"it raises {type(cause).__name__} on float64 inputs ({text})"
    reason = _mismatch(problem, wide)
    rounds = getattr(wide.source, "rounds_grad_outputs", None)
    if reason is None and rounds is not None and rounds():
        # (its float64 run is the narrow one in its grad_outputs: differences there
        # step on stairs of the narrow dtype, and x.to(torch.complex64)'s v read 0)
        reason = ("the function's outputs stay narrower than double precision on float64 "
                  "inputs (a cast inside it), so autograd rounds the grad_outputs to them")
    return (None, reason) if reason else (wide, None)


def _draws_random(problem: Problem) -> bool:
    """Whether the function (under the first derivative, for a second-order
    check) draws random numbers."""
    own = getattr(problem.source, "draws_random", None)
    if own is not None:
        return own()
    return not problem.differentiates_inside and \
        problem.engine.draws_random(problem.source, problem.inputs)


def _mismatch(problem: Problem, wide: Problem) -> str | None:
    """Why ``wide``'s outputs are not ``problem``'s in double precision, or ``None``."""
    if wide.float_out != problem.float_out or wide.diff_out != problem.diff_out:
        return "on float64 inputs it returns different outputs"
    for o in wide.float_out:
        if wide.out_arrays[o].shape != problem.out_arrays[o].shape:
            return f"on float64 inputs its output {o} has another shape"
        if wide.epsilon(out_idx=o) > np.finfo(np.float64).eps:
            if o in wide.computed_in:
                dtype = wide.computed_in[o]
                return (f"on float64 inputs its output {o} holds only {dtype} numbers (as when "
                        f"it computes in {dtype} inside)")
            return f"on float64 inputs it returns {wide.output_dtype(o)} (output {o})"
    return None


def second_differences(ev: Evaluator) -> tuple:
    """``(H by block, L by input)``: the second derivative of every output real
    coordinate along every input real coordinate, from central second
    differences at ``CURVATURE_STEP`` times the coordinate's magnitude; and
    each input's magnitude per coordinate (term 5's cap).

    A step is only good where the derivative barely changes across it: a
    coordinate ``c`` whose difference moves a derivative by more than
    ``LOCAL`` of itself (``h |H_rc| > LOCAL |D_rc|``, ``D`` the central first
    difference) is differenced again at an ``REFINE`` times smaller step, up
    to ``LEVELS`` times, until two steps agree: a step that straddles a pole
    (digamma at -5.99686 in float32, 0.0031 from -6, with a step of 0.0059)
    gives a second difference of the wrong size, and term 5 with it."""
    p = ev.problem
    second, scales = {}, {}
    for in_idx in p.diff_in:
        x = coords.to_real(p.arrays[in_idx])
        n = x.size
        if n == 0:
            for o in p.float_out:
                second[o, in_idx] = np.zeros((p.layout.out_size(o), 0))
            scales[in_idx] = x
            continue
        scales[in_idx] = np.maximum(np.abs(x), max(float(np.max(np.abs(x), initial=0.0)), FLOOR))
        h = np.maximum(np.abs(x), FLOOR) * CURVATURE_STEP
        columns = np.arange(n)
        blocks, local = _differences(ev, in_idx, x, h, columns)
        for o, (H, _) in blocks.items():
            second[o, in_idx] = H
        finer = blocks
        for _ in range(LEVELS):
            edge = columns[_outside(finer, columns.size) & ~local]
            columns = columns[~local]
            if columns.size == 0:
                break
            h = h / REFINE
            # a step past the edge of the domain (log at 1e-6 in float32, its step
            # 1.5e-5): the coordinate's own magnitude sets the next one
            h[edge] = np.minimum(h[edge], np.abs(x[edge]) * CURVATURE_STEP)
            finer, local = _differences(ev, in_idx, x, h, columns)
            agree = np.ones(columns.size, dtype=bool)
            for o, (H, _) in finer.items():
                coarse = second[o, in_idx][:, columns]
                with np.errstate(invalid="ignore"):
                    agree &= np.all(np.abs(H - coarse) <= np.abs(H) / 4, axis=0)
                second[o, in_idx][:, columns] = H
            local |= agree
    return second, scales


def _outside(blocks: dict, count: int) -> np.ndarray:
    """Per column of ``_differences``' blocks (``count`` of them), whether its
    second difference is NaN in some output: a step left the domain."""
    found = np.zeros(count, dtype=bool)
    for H, _ in blocks.values():
        found |= np.any(np.isnan(H), axis=0)
    return found


def _differences(ev: Evaluator, in_idx: int, x: np.ndarray, h: np.ndarray,
                 columns: np.ndarray) -> tuple:
    """``({out_idx: (H, D)}, local)``: central second and first differences of
    every output along the real coordinates ``columns`` of input ``in_idx``
    (steps ``h``, the whole array's; ``H`` and ``D`` of shape (outputs,
    columns)), and per column whether the step is local (``h |H| <= LOCAL
    |D|`` on every row, or the output does not move)."""
    p = ev.problem
    n, k = x.size, columns.size
    step = h[columns]
    moved = np.broadcast_to(x, (2, k, n)).copy()
    moved[0, np.arange(k), columns] += step
    moved[1, np.arange(k), columns] -= step
    arrays = coords.from_real_rows(moved.reshape(2 * k, n), p.arrays[in_idx].shape,
                                   p.arrays[in_idx].dtype)
    outs = ev.outputs_at(in_idx, arrays, f"taking second differences for input {in_idx}",
                         f"taking a second difference for input {in_idx}", tolerant=True)
    result, local = {}, np.ones(k, dtype=bool)
    for o, values in outs.items():
        rows = coords.to_real_rows(values).reshape(2, k, -1)
        centre = coords.to_real(p.out_arrays[o])
        H = ((rows[0] + rows[1] - 2 * centre) / step[:, None] ** 2).T
        D = ((rows[0] - rows[1]) / (2 * step[:, None])).T
        with np.errstate(invalid="ignore"):
            local &= ~np.any(step * np.abs(H) > LOCAL * np.abs(D), axis=0)
        local &= ~np.any(np.isnan(H), axis=0)   # (a step outside the domain: see no curvature)
        result[o] = (H, D)
    return result, local


def _input_unit(problem: Problem) -> float:
    """Term 5's relative move of an input: ``INPUT_ROUNDING`` of ``u``."""
    return INPUT_ROUNDING * formula_epsilon(problem) / 2


def _magnitudes(wide: Problem) -> dict:
    """``|x_c|`` of every real coordinate of each checked input (term 5)."""
    return {i: np.abs(coords.to_real(wide.arrays[i])) for i in wide.diff_in}


def _complex_pairs(wide: Problem) -> frozenset:
    """The (output, input) blocks of complex outputs by complex inputs (term 5
    takes their real pairs together: ``lowprecision._paired_term``)."""
    return frozenset((o, i) for o in wide.float_out for i in wide.diff_in
                     if np.iscomplexobj(wide.out_arrays[o]) and np.iscomplexobj(wide.arrays[i]))


def wide_blocks(ev: Evaluator, wide: Problem) -> Jacobian:
    """The numerical Jacobian of ``ev``'s low-precision problem from its float64
    run ``wide``, with ``errors``, the ``allowance`` of the analytical side and
    the ``precision`` of the comparison."""
    p = ev.problem
    start = time.perf_counter()
    wide_ev = Evaluator(wide)
    jac = richardson_blocks(wide_ev)
    relative, each = forward_rounding(p, wide)
    second, scales = second_differences(wide_ev)
    terms = output_terms(jac, second, each, scales, _magnitudes(wide), _input_unit(p),
                         _complex_pairs(wide))
    jac.allowance = allowance(jac, formula_epsilon(p), relative, terms, sum_units(p, wide),
                              own_rows=p.order == 1)
    if p.order == 1:  # a kink within a rounding of the input: either side's derivative
        extra = kink_allowance(wide_ev, jac, second, scales, jac.allowance,
                               formula_epsilon(p) / 2)
        for key, block in extra.items():
            jac.allowance[key] = jac.allowance[key] + block
    if p.order == 2:  # term 6: a second-order formula's rounding, measured
        for key, spread in measured_rounding(p, formula_epsilon(p), widened).items():
            jac.allowance[key] = jac.allowance[key] + MARGIN * spread
    complex_ = any(np.iscomplexobj(a) for a in (*wide.arrays.values(),
                                                 *wide.out_arrays.values()))
    jac.precision = Precision(formula_dtype(p), "complex128" if complex_ else "float64",
                              "Richardson extrapolation")
    jac.counts = {"function": wide.counts["function"]}
    jac.seconds = time.perf_counter() - start
    p.counts["function"] += wide.counts["function"]
    p.batching["batched_calls"] += wide.batching["batched_calls"]
    if p.batching["fallback"] is None and wide.batching["fallback"]:
        p.batching["fallback"] = f"(the float64 run) {wide.batching['fallback']}"
    return jac


def rounding_allowance(jac: Jacobian, low: Problem, wide: Problem, epsilon: float,
                       sums: dict | None = None, curvature_at: dict | None = None,
                       curvature: tuple | None = None) -> dict:
    """The allowance of a formula in ``low``'s dtype (machine epsilon ``epsilon``)
    against ``jac``, with terms 4 and 5 from its float64 run ``wide`` (see
    ``gradcheck.lowprec.lowprecision``); ``sums``: term 3's unit by output, where
    the caller knows it (else measured by ``sum_units``); ``curvature_at``: by
    block, the entries term 5 applies to (default every entry); ``curvature``:
    ``second_differences`` of the float64 function, where the caller has them
    (default ``wide``'s)."""
    relative, each = forward_rounding(low, wide)
    second, scales = curvature or second_differences(Evaluator(wide))
    terms = output_terms(jac, second, each, scales, _magnitudes(wide), _input_unit(low),
                         _complex_pairs(wide))
    if curvature_at is not None:
        terms = {key: np.where(curvature_at[key], term, 0.0) for key, term in terms.items()}
    return allowance(jac, epsilon, relative, terms, sum_units(low, wide) if sums is None else sums)


def attach_reference_allowance(ev: Evaluator, jac: Jacobian, wide: Problem | None) -> None:
    """Give the mpmath reference Jacobian ``jac`` of a low-precision problem the
    allowance for the formula's rounding: from the float64 run ``wide`` when
    there is one, else without terms 4 and 5 (see ``gradcheck.lowprec.lowprecision``)."""
    p = ev.problem
    if wide is None:
        jac.allowance = allowance(jac, formula_epsilon(p))
    else:
        jac.allowance = rounding_allowance(jac, p, wide, formula_epsilon(p))
        p.counts["function"] += wide.counts["function"]
    jac.precision = Precision(formula_dtype(p), "mpmath", "mpmath reference")
