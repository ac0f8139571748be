"""Faults of the function itself, each named for what it is.

A derivative check compares numbers computed from the function; when the
function does something that makes those numbers meaningless, the report
says that instead of "the formula is wrong" or "not reentrant":

- ``mutation_results``: the function (or its backward, or its jvp) changed
  an input that requires grad in place. ``Problem`` compares those inputs
  before and after every call it makes and records the first change;
- ``grad_output_results``: a backward wrote into the grad_output it was
  handed (``Problem.check_grad_outputs``);
- ``determinism_results``: the function evaluated twice at the same inputs,
  the same way, gives different outputs (a nondeterministic forward makes
  finite differences noise);
- ``nonfinite_results``: NaN or inf in the outputs at the given inputs or in
  any Jacobian, naming the side (finite differences, the vjp, the jvp) and
  the first entry; and the entries that Richardson extrapolation could not
  resolve because every step straddled a jump (``Jacobian.unresolved``),
  named as a discontinuity, not as a formula error;
- ``no_double_backward_result``: a second-order check whose backward builds no
  graph at all (NumPy inside, ``@once_differentiable``), found before any Jacobian.

Each returns failing ``Result``s only: a fault that was not seen adds
nothing to the report.
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.verdict.compare import Result, compare
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.jacobian import Jacobian
from adcheck.gradcheck.core.problem import Problem
from adcheck.gradcheck.core.coords import largest_finite
from adcheck.gradcheck.lowprec.lowprecision import formula_epsilon, is_narrow
from adcheck.gradcheck.numerics.precise import as_zero
from adcheck.gradcheck.verdict.offdomain import off_domain

#: what each Jacobian's non-finite entries say about the function, by mode
_SIDE = {"numerical": "finite differences", "reference": "the mpmath reference",
         "reverse": "the vjp", "forward": "the jvp",
         "fast-reverse": "the vjp", "fast-forward": "the jvp"}


def _where(mask: np.ndarray) -> tuple:
    return tuple(int(k[0]) for k in np.nonzero(mask))


def _kind(value) -> str:
    return "NaN" if np.isnan(value) else "inf"


def mutation_results(problem: Problem) -> list:
    """One failing result per input that requires grad and was changed in place."""
    results = []
    for in_idx, (who, what, change, where) in sorted(problem.mutations.items()):
        position = "[" + ", ".join(str(k) for k in where) + "]"
        results.append(Result(
            "input-mutation", "function", "input", None, in_idx, False, change, None,
            diagnosis=(f"{who} changed input {in_idx} in place while {what} (by {change:.1e} "
                       f"at {position}): every evaluation must leave the inputs as they "
                       "were, or the derivatives checked are those of another function; "
                       "clone the input before modifying it (x = x.clone()), or use "
                       "an out-of-place operation")))
    return results


def grad_output_results(problem: Problem) -> list:
    """One failing result per output whose grad_output a backward changed in place."""
    results = []
    for out_idx, (what, change, where) in sorted(problem.grad_output_changes.items()):
        position = "[" + ", ".join(str(k) for k in where) + "]"
        results.append(Result(
            "grad-output-mutation", "reverse", "grad_output", out_idx, None, False, change,
            None, diagnosis=(
                f"the backward{problem.of} changed the gradient of output {out_idx} it was "
                f"handed (grad_output) in place while {what} (by {change:.1e} at {position}): "
                "autograd may hand one gradient tensor to several Functions (y = f(x) + g(x) "
                "gives both the same one), which then see the change, or an expanded one "
                "that cannot be written (torch raises on y.sum().backward()); compute a new "
                "tensor (grad = grad * s) instead of writing into it (grad.mul_(s))")))
    return results


#: units of rounding by which two runs of the same low-precision computation may
#: differ (a parallel reduction sums in another order): what nondet_tol means there
NONDET_ULPS = 8


def repeat_rounding(problem: Problem) -> float:
    """The relative difference allowed between two runs of the same computation
    beyond ``nondet_tol``: ``NONDET_ULPS`` units of rounding of a formula narrower
    than double precision (its kernels may reduce in another order each run,
    as torch's do in float32), none in double precision."""
    return NONDET_ULPS * formula_epsilon(problem) if is_narrow(problem) else 0.0


def determinism_results(ev: Evaluator, nondet_tol: float) -> list:
    """The function twice at the given inputs, the same call both times: the
    outputs must agree within ``nondet_tol`` plus rounding relative to the
    output's largest value: ``FORWARD_ULPS`` of double precision, or for a
    low-precision formula its own (``repeat_rounding``) where that is more;
    NaN passes where both are NaN.

    The problem's own first evaluation stands in for the first call: a second
    that agrees with it ends the check at one evaluation. One that does not is
    no verdict yet (that evaluation ran with grad enabled, on the caller's own
    tensors; the second, of a first derivative, without building its graph), so
    two calls made the same way are then compared."""
    p = ev.problem
    what = "evaluating it twice at the given inputs"
    # (a first derivative's values without their graph: the same bits where the engine
    # computes alike either way, and two calls made alike below where they are not)
    second = ev.evaluate({}, what, values_only=True)
    for o in p.float_out:   # (a loop: all() of a generator is a frame more)
        if not _same_bits(second[o], p.out_arrays[o]):
            break
    else:
        # the same bits (NaN payloads included) differ by 0 within any tolerance,
        # and a NaN twice passes here: what the comparison below would say
        return []
    if not _repeat_failures(p, p.out_arrays, second, nondet_tol):
        return []
    return _repeat_failures(p, second, ev.evaluate({}, what, values_only=True), nondet_tol)


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether ``a`` and ``b`` hold the same bits in the same shape and dtype."""
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


#: units of double precision's rounding, relative to an output's largest value, by
#: which two calls of the same forward may differ without failing the determinism
#: check: LAPACK's and BLAS's vectorised paths depend on where the arrays sit in
#: memory (torch.linalg.lstsq of a complex 3x4 system differed by up to 7 units in
#: 6 checks of 40; torch checks no forward's determinism), while a forward that draws
#: random numbers differs by the size of its values
FORWARD_ULPS = 64


def _repeat_failures(p: Problem, first: dict, second: dict, nondet_tol: float) -> list:
    """The outputs of two calls compared (``determinism_results``): the failures."""
    rounding = max(repeat_rounding(p), FORWARD_ULPS * float(np.finfo(np.float64).eps))
    results = []
    for o in p.float_out:
        values = np.abs(first[o].reshape(-1))
        scale = largest_finite(values)
        result = compare("deterministic", "function", "function", o, None,
                         first[o].reshape(-1), second[o].reshape(-1),
                         nondet_tol + rounding * scale, same_nonfinite=True)
        if not result.passed:
            layers = getattr(p.source, "random_layers", None)
            fix = ("the module is in training mode, where its random layers "
                   f"({', '.join(layers)}) draw anew on every call (dropout masks, RReLU "
                   "slopes): call .eval() on it to check it" if layers else
                   "fix its randomness inside it (a seeded generator)")
            result.diagnosis = (
                f"nondeterministic forward: {p.subject} evaluated twice at the same inputs "
                f"gives output {o} values that differ by {result.max_error:.1e}; finite "
                f"differences of a function that changes from call to call mean nothing: {fix}"
                f", or, if the variation is intended and small, set nondet_tol >= "
                f"{result.max_error:.1e}")
            results.append(result)
    return results


def nonfinite_results(problem: Problem, jacobians: dict) -> list:
    """NaN or inf in the outputs at the given inputs, then in each Jacobian
    (the full one when fast mode also computed it)."""
    results = []
    bad_outputs = {}
    for o in problem.float_out:
        values = problem.out_arrays[o].reshape(-1)
        finite = np.isfinite(values)
        if not np.logical_and.reduce(finite):   # (all(), without its Python frame)
            bad = ~finite
            where = _where(bad)
            bad_outputs[o] = f"output {o} is {_kind(values[where])} at [{where[0]}]"
            results.append(Result(
                "nonfinite-output", "function", "finite", o, None, False, np.inf, None,
                diagnosis=(f"{bad_outputs[o]} ({int(bad.sum())} of {values.size} entries) at "
                           "the given inputs: no derivative can be checked where the "
                           "function is not finite; check it at points where it is")))
    full = {jac.mode for label, jac in jacobians.items() if label.startswith("slow-")}
    numerical = jacobians.get("slow-numerical", jacobians.get("numerical"))
    for label, jac in jacobians.items():
        if not label.startswith("slow-") and jac.mode.removeprefix("fast-") in full:
            continue   # fast mode's projection: the full Jacobian says where
        for key in sorted(jac.blocks):
            block = jac.blocks[key]
            if jac.unresolved and key in jac.unresolved:
                results.append(_unresolved(key, jac.unresolved[key], jac.compressed(key[1])))
                block = as_zero(block, jac.unresolved[key])
            if numerical is not None:
                # (no derivative there: said in Report.partial; AD's value is not judged)
                block = as_zero(block, off_domain(numerical, key))
            if not np.logical_and.reduce(np.isfinite(block), axis=None):
                expected = (None if numerical is None or numerical is jac
                            else numerical.blocks.get(key))
                results.append(_nonfinite_block(jac, key, block, expected, bad_outputs,
                                                problem.raised_nearby))
    return results


def _unresolved(key, mask: np.ndarray, cells: bool = False) -> Result:
    where = _where(mask)
    return unresolved_result(key, int(mask.sum()), mask.size, where, cells)


def unresolved_result(key, count: int, size: int, where: tuple, cells: bool = False) -> Result:
    """The failure that ``count`` of ``size`` entries (cells of ``J S`` when
    ``cells``), first ``where``, had no step free of a jump."""
    out_idx, in_idx = key
    what, column = ("cells of J S", "seed column") if cells else ("entries", "input coordinate")
    diagnosis = (f"at {count} of {size} {what}, first [{where[0]}, "
                 f"{where[1]}] (output coordinate {where[0]}, {column} {where[1]}), "
                 "every step down to 2**-36 of the input (of 2**-6 for an input below it) "
                 "straddles a jump or a kink (an input below 2**-11 is also differenced "
                 "from a quarter of itself down, one of 1024 and more on a unit's steps, "
                 "2**-5 or 128 of its spacings down by halves; those steps did not resolve "
                 "it either, their moves hidden in the output's rounding): the function is "
                 "discontinuous or not differentiable there, or a jump, a kink or a branch "
                 "cut lies closer than its rounding lets steps resolve, so those entries "
                 "are no evidence for or against the formula; check it at a point away "
                 "from the jump")
    return discontinuous_result(out_idx, in_idx, diagnosis)


def discontinuous_result(out_idx: int, in_idx: int, diagnosis: str) -> Result:
    """The failure that the function is discontinuous or not differentiable at
    the point, in block ``(out_idx, in_idx)``: no evidence either way (a skip)."""
    return Result("discontinuous", "numerical", "numerical", out_idx, in_idx, False, np.inf,
                  None, diagnosis=diagnosis)


#: the diagnosis of a second-order failure when the backward builds no graph
NO_DOUBLE_BACKWARD = (
    "the backward builds no graph of the inputs (it computes outside autograd, on detached "
    "tensors, or is marked @once_differentiable), so autograd takes its derivative as zero: "
    "the function has no double backward. Write the backward in differentiable operations "
    "of the engine if second derivatives are meant to work; else this is expected")


def no_double_backward_result(mode: str) -> Result:
    """The failure of a second-order check in ``mode`` whose first derivative
    builds no graph at all (``secondorder.builds_no_graph``): no Jacobian was
    built, since autograd cannot differentiate that backward again."""
    return Result("double-backward", mode, "numerical", None, None, False, np.inf, None,
                  diagnosis=NO_DOUBLE_BACKWARD)


def _nonfinite_block(jac: Jacobian, key, block, expected, bad_outputs,
                     raised: str | None = None) -> Result:
    bad = ~np.isfinite(block)
    where = _where(bad)
    there = None
    if expected is not None and expected.shape == block.shape:
        there = expected[where]
    why = bad_outputs.get(key[0])
    if why is None and raised is not None:   # (a step that raised counts as NaN)
        why = (f"the function raised {raised} within a step of the given inputs (a step "
               "leaves its domain)")
    return nonfinite_result(jac.mode, key, int(bad.sum()), block.size, where, block[where],
                            there, why)


def nonfinite_result(mode: str, key, count: int, size: int, where: tuple, value,
                     expected=None, bad_output: str | None = None) -> Result:
    """The failure that ``count`` of ``size`` entries of ``mode``'s block
    ``key`` are NaN or inf, the first at ``where`` (``value``); ``expected``:
    finite differences there, when known; ``bad_output``: what is wrong with
    the output at the given inputs, when something is. Of a dense block
    (``nonfinite_results``) or of one compared a chunk at a time (a ``Tally``'s
    counts)."""
    out_idx, in_idx = key
    side = _SIDE.get(mode, mode)
    count = f"{count} of {size} entries, first at [{where[0]}, {where[1]}]"
    if mode in ("numerical", "reference"):
        why = bad_output or (
            "the function is NaN or inf within a step of the given inputs (a step leaves its "
            "domain, or a pole or an overflow is near)")
        text = (f"{side} give {_kind(value)} at {count}: {why}; the derivative cannot "
                "be checked there by differences: check it at points where the function is "
                "finite nearby")
    else:
        there = ""
        if expected is not None:
            # central differences can be NaN where one-sided ones are finite (a step
            # that overflows or leaves the domain): they cannot say it is a kink
            there = (f", where central differences are {_kind(expected)} too: the function "
                     "is not differentiable there, or a step overflows or leaves its "
                     "domain" if not np.isfinite(expected) else
                     f", where finite differences give {expected:.6g}: the formula produces "
                     "it (a 0/0, inf * 0, log(0), an input outside its domain, or a NaN "
                     "constant)")
        text = f"{side} returns {_kind(value)} at {count}{there}"
    # where it is, is in the text: "max error inf" would say nothing
    return Result("nonfinite", mode, "finite", out_idx, in_idx, False, np.inf, None,
                  diagnosis=text)
