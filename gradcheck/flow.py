"""The steps of one check, in order, for slow and fast mode.

Slow mode: the expected Jacobian (finite differences, Richardson, or the
mpmath reference), then each AD side's Jacobian compared with it (the
reverse side twice, for reentrancy), the adjoint identity between the two
sides, outputs detached from their inputs, and, against a reference, whether
finite differences would have agreed. Fast mode: the same with one random
projection ``v^T J u`` per pair instead of whole Jacobians, and the slow
Jacobians computed to explain a failure. Then the other checks (scaling,
undefined gradients, dtypes, batched products). Every step reads the
``Options`` and adds ``Result``s and Jacobians to the ``Report``.
"""
from __future__ import annotations

import math

import numpy as np

from adcheck.gradcheck.verdict import checks
from adcheck.gradcheck.verdict.alone import alone_results
from adcheck.gradcheck.verdict.adfloor import rejudge
from adcheck.gradcheck.verdict.confirm import confirm
from adcheck.gradcheck.verdict import offdomain
from adcheck.gradcheck.verdict.adjoint import adjoint_results, slow_projections
from adcheck.gradcheck.verdict.diagnosis import (cast_inside, on_stairs, zero_numerical,
                                                 zero_output)
from adcheck.gradcheck.core.grids import narrow_grid, stair_width, within_rounding_of
from adcheck.gradcheck.verdict.compare import (
    compare_jacobians,
    compare_pair,
    shared_magnitude,
)
from adcheck.gradcheck.errors import UncheckableError
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.fast import draw_probes, fast_numerical, fast_projections
from adcheck.gradcheck.lowprec.indtype import refuse_unresolved
from adcheck.gradcheck.lowprec.lowprecision import formula_dtype, formula_epsilon, is_narrow
from adcheck.gradcheck.large.lowprobed import stated_relative
from adcheck.gradcheck.core.numerical import central_blocks
from adcheck.gradcheck.core.options import Options
from adcheck.gradcheck.core.jacobian import cell_layout
from adcheck.gradcheck.numerics.precise import annotate
from adcheck.gradcheck.large.probed import escape_odds
from adcheck.gradcheck.large.resolved import cell_reach
from adcheck.gradcheck.numerics.largesteps import CEILING
from adcheck.gradcheck.numerics.noisefloor import largest_input
from adcheck.gradcheck.producers import ad_producer, choose, expected_producer
from adcheck.gradcheck.core.repeat import repeat_first_run
from adcheck.gradcheck.core.reuse import ad_kept, ad_taken, expected_jacobian, judged
from adcheck.gradcheck.large.streamed import streamed
from adcheck.gradcheck.large.probestream import streamed_probed
from adcheck.gradcheck.large.window import explain
from adcheck.gradcheck.verdict.report import Report, describe
from adcheck.gradcheck.verdict.kinkpoint import name_kinks
from adcheck.gradcheck.verdict.stairs import moved_width
from adcheck.gradcheck.verdict.tinyinputs import name_small_inputs
from adcheck.gradcheck.verdict.vmaprule import vmap_rule_results
from adcheck.gradcheck.core.sides import FORWARD, REVERSE, SIDES
from adcheck.gradcheck.core import coords
from adcheck.gradcheck.core.coords import largest_finite


def sides(options: Options) -> list:
    """The AD sides the options check, reverse first."""
    return [side for side, wanted in ((REVERSE, options.check_backward_ad),
                                      (FORWARD, options.check_forward_ad)) if wanted]


def _epsilon(ev: Evaluator) -> float:
    """Machine epsilon of the least precise dtype among the checked tensors."""
    return formula_epsilon(ev.problem)


def _magnitudes(numerical, scale=None, layout=None) -> dict:
    """The floor of rounding tolerances, per block: the largest Frobenius norm
    (of the finite entries) of any numerical block (rounding in one block's AD result scales with the
    terms it shares with the others, even where that block is zero).

    In fast mode only ``||v * J u||`` is known; times ``sqrt(m n)`` it is of
    the order of ``||J||_F``.
    """
    if scale is None:
        norms = {key: _finite_norm(numerical[key]) for key in numerical.blocks}
    else:
        # (math.sqrt of the integer, correctly rounded as np.sqrt's, without NumPy's scalar)
        norms = {(o, i): largest_finite(s) * math.sqrt(layout.out_size(o) * layout.in_size(i))
                 for (o, i), s in scale.items()}
    return shared_magnitude(norms)


def _finite_norm(block: np.ndarray) -> float:
    """The Frobenius norm of the finite entries (a NaN entry is not a scale)."""
    finite = np.where(np.isfinite(block), block, 0.0)
    top = largest_finite(finite)
    # (scaled: the derivative of 1/x at 1e-150 is 1e300, whose square overflows)
    return top * coords.norm(finite / top) if top > 1e150 else coords.norm(finite)


def _holds_nan(numerical) -> bool:
    """Whether a dense expected Jacobian holds NaN (``offdomain`` looks then)."""
    return not numerical.seeds and any(np.isnan(b).any() for b in numerical.blocks.values())


def _expected(ev: Evaluator, report: Report, options: Options, plan):
    """The expected Jacobian of a plan of whole blocks, in ``report``; its NaN
    entries looked at (a constraint on an input: narrow steps, or left out)."""
    numerical = expected_jacobian(ev, options, plan, expected_producer(options, plan))
    report.jacobians[numerical.mode] = numerical
    # (a Jacobian kept from an earlier check of the sample was looked at: said again)
    if numerical.off_domain is not None or _holds_nan(numerical):
        report.partial += [s for s in offdomain.mark(ev, numerical) if s not in report.partial]
    report.magnitudes = _magnitudes(numerical)
    return numerical


def slow(ev: Evaluator, report: Report, rng, options: Options) -> None:
    """Whole Jacobians (or their cells, compressed or probed), each AD side
    against the expected one; a plan of chunks goes to ``streamed``."""
    plan = choose(ev, rng, options, _epsilon(ev))
    report.plan = plan.kind
    if plan.kind == "probed" and plan.streamed:
        return streamed_probed(ev, report, options, sides(options), _epsilon(ev), plan)
    if plan.kind == "chunked" or plan.streamed:
        return streamed(ev, report, rng, options, sides(options), _epsilon(ev), plan)
    numerical = _expected(ev, report, options, plan)
    tols = plan.scheme.tolerances(numerical, _epsilon(ev))
    built, compared = {}, {}
    for side in sides(options):
        # (a sample's dense AD Jacobians are kept for its later checks: core.reuse_ad)
        produce = ad_kept(ev, options, plan, side, ad_producer(side, options, plan))
        taken = ad_taken(ev, options, plan, side)
        with ev.riding():   # the other checks' vectors ride in its batches
            jac = built[side.mode] = report.jacobians[side.mode] = \
                produce(ev) if taken is None else taken
        compared[side.mode] = plan.against(side, numerical, tols)
        # (off the domain, no derivative: those entries are not judged, Report.partial)
        expected, judged_jac, side_tols = offdomain.masked(numerical, *compared[side.mode], jac)
        found = compare_jacobians(side.mode, expected, judged_jac, options.atol, options.rtol,
                                  side_tols)
        # a failure may be the AD side's own rounding: measured only then (adfloor)
        found = rejudge(ev, produce, expected, judged_jac, side_tols, found, plan.scheme,
                        _epsilon(ev))
        # a failure may be the first steps' bias: smaller steps confirm them only then
        found, changed = confirm(ev, plan, numerical, side, judged_jac, found, _epsilon(ev))
        if changed:   # (the expected Jacobian took confirmed columns)
            tols = plan.scheme.tolerances(numerical, _epsilon(ev))
            compared = {mode: plan.against(SIDES[mode], numerical, tols) for mode in compared}
            expected, _, side_tols = offdomain.masked(numerical, *compared[side.mode], jac)
        found = _computed_narrow(ev, annotate(found, expected, side_tols or {}))
        report.results += _on_stairs(ev, name_small_inputs(ev, name_kinks(ev, found)))
        # reentrancy is a property of the backward (PyTorch's check), judged once a sample
        if side is REVERSE and not judged(ev, "reentrant", options.nondet_tol):
            again = _repeat(ev, lambda: produce(ev), jac, plan.kind not in UNREPLAYABLE)
            report.results += checks.reentrant(ev.problem, jac, again, options.nondet_tol)
    refuse_unresolved(ev.problem, numerical, tols, report.results)
    # (a dense plan's only where an input reaches a unit's steps: large.resolved.poorly_resolved)
    if options.precise and (plan.seeds or largest_input(ev) >= CEILING):
        report.cell_reach = cell_reach(ev.problem, compared, built)
    if plan.seeds:
        _cover(report, plan, numerical, compared, _epsilon(ev))
        _explain_cells(ev, report, plan.scheme, numerical, plan.wide)
    if len(built) == 2 and options.check_adjoint and plan.kind != "probed":
        layout = cell_layout(ev.problem.layout, plan.seeds)
        probes = draw_probes(ev.problem, rng, options.probes, layout)
        rev_p, jtv, fwd_p, ju = slow_projections(probes, built["reverse"], built["forward"],
                                                 ev.problem.layout)
        report.results += adjoint_results(probes, rev_p, jtv, fwd_p, ju, _epsilon(ev),
                                          options.nondet_tol, report.magnitudes)
    if options.check_detached:
        report.results += checks.detached(ev, offdomain.zeroed(numerical, numerical),
                                          options.atol)
    if numerical.mode == "reference":
        _who_is_wrong(ev, report, options)


#: plans whose reverse Jacobian is made of more than product batches (every
#: other plan here is ``ad_blocks``', whose repeat may be its batches made again:
#: ``gradcheck.core.repeat``)
UNREPLAYABLE = ("probed", "compressed")


def _repeat(ev: Evaluator, build, first, replayable: bool = True):
    """The reverse side's second build for the reentrancy check, batched as the
    first was: ``first`` itself when its batches made again give the same bits
    (nothing to assemble), else ``build()`` from the batches made again."""
    if replayable and repeat_first_run(ev):
        return first
    try:
        with ev.riding(again=True):   # batched as the first run was
            return build()
    finally:
        ev.prefetched.replay([])   # (none left over for a later build)


def _computed_narrow(ev: Evaluator, results: list) -> list:
    """``results``, a failure of a double-precision check whose AD block lies
    on a narrower dtype's grid and whose expected block does not diagnosed as
    that: the function computes in that dtype inside (``diagnosis.narrow_grid``)."""
    if all(r.passed for r in results) or is_narrow(ev.problem) or \
            ev.problem.inputs_on_a_grid():
        return results
    for result in results:
        if not result.passed and result.actual is not None and result.expected is not None:
            narrow = narrow_grid(result.actual)
            if narrow is not None and narrow_grid(result.expected) is None and \
                    within_rounding_of(narrow, result.expected, result.actual):
                result.diagnosis = cast_inside(narrow, "vjp" if result.mode == "reverse"
                                               else "jvp")
    return results


def _on_stairs(ev: Evaluator, results: list) -> list:
    """``results``, a failure whose numerical block is zero (``zero_numerical``)
    said to be stairs when the output's values are whole multiples of a
    coarse width (``grids.stair_width``), or its values and its changes as the
    input moves farther are (``stairs.moved_width``: a 0/1 quantizer's): "the
    function does not use this input" is false of ``round(4 x) / 4`` with a
    straight-through backward; and said to come from a forward that underflows
    or cancels when the output is exactly 0 and no stairs show (torch's ndtr(-12)).
    Inputs on stairs themselves (typed ones: 0.7, -1.3, 0.4) say nothing of the
    values alone: 2 x is then a multiple of 0.1 too."""
    p = ev.problem
    zero = [r for r in results if not r.passed and r.diagnosis == zero_numerical(r.mode)]
    typed = bool(zero) and any(stair_width(p.arrays[i]) for i in p.diff_in)
    for result in zero:
        width = None if typed else stair_width(p.out_arrays[result.out_idx])
        moved = width is None and moved_width(ev, result.in_idx, result.out_idx)
        if width or moved:
            result.diagnosis = on_stairs(result.mode, width or moved, bool(moved))
        elif not np.any(p.out_arrays[result.out_idx]):   # an unused input, or an underflow
            result.diagnosis = zero_output(result.mode)
    return results


def _cover(report: Report, plan, numerical, compared: dict, epsilon) -> None:
    """What the compressed or probed Jacobians could have missed, by mode."""
    for mode, jac in report.jacobians.items():
        report.coverage[mode] = jac.note
    if plan.kind == "probed":
        tols = compared.get("forward", (None, None))[1]
        if tols is None:
            tols = plan.scheme.tolerances(numerical, epsilon)
        if tols is None:   # the comparator's own atol and rtol, as matrices
            tols = {k: plan.scheme.entry_tolerance(b, None, epsilon)
                    for k, b in numerical.blocks.items()}
        reverse = compared.get("reverse", (None, None))[1]
        if numerical.allowance is not None:   # the whole tolerance is the rounding allowance
            report.escape = escape_odds(numerical, tols, reverse, plan.probes, plan.scheme,
                                        epsilon, r=stated_relative(epsilon), relative=0.0)
        else:
            report.escape = escape_odds(numerical, tols, reverse, plan.probes, plan.scheme,
                                        epsilon)


def _explain_cells(ev: Evaluator, report: Report, scheme, numerical, wide=None) -> None:
    """A compressed check failed in a cell: name the entry, show its window
    (``wide``: a narrower formula's float64 run, differenced instead)."""
    for result in report.failures:
        jac = report.jacobians.get(result.mode)
        if result.check in SIDES and jac is not None and jac.seeds and result.where:
            explain(ev, result, jac, scheme, _epsilon(ev), numerical, wide)


def _who_is_wrong(ev: Evaluator, report: Report, options: Options) -> None:
    """Against a reference, say whether finite differences would have agreed."""
    reference = report.jacobians["reference"]
    failing = [r for r in report.failures if r.against == "reference"]
    if not failing:
        return
    fd = report.jacobians["numerical"] = central_blocks(ev, options.eps)
    for result in failing:
        agree = compare_pair("numerical", reference, fd, result.out_idx, result.in_idx,
                             options.atol, options.rtol)
        if agree.passed:
            result.detail = ("finite differences agree with the mpmath reference: the "
                             f"{result.mode}-mode formula is wrong")
        else:
            result.detail = (f"finite differences disagree with the mpmath reference too (max "
                             f"error {agree.max_error:.1e}): judge by the reference")


def fast(ev: Evaluator, report: Report, rng, options: Options) -> None:
    """One random projection per pair each way, explained by the slow
    Jacobians when it fails."""
    probes = draw_probes(ev.problem, rng, options.probes)
    numerical, scale = fast_numerical(ev, probes, options.eps)
    report.jacobians["numerical"] = numerical
    report.magnitudes = _magnitudes(numerical, scale, ev.problem.layout)
    tols = {key: options.atol + options.rtol * s for key, s in scale.items()}
    built, products = {}, {}
    for side in sides(options):
        with ev.riding():
            jac, products[side.mode] = fast_projections(ev, side, probes)
        report.results += compare_jacobians(jac.mode, numerical, jac, 0, 0, tols)
        if side is REVERSE and not judged(ev, "reentrant", options.nondet_tol):
            # (reentrancy is a property of the backward: PyTorch's check)
            again = _repeat(ev, lambda: fast_projections(ev, side, probes)[0], jac)
            report.results += checks.reentrant(ev.problem, jac, again, options.nondet_tol)
        built[side.mode] = report.jacobians[jac.mode] = jac
    if len(built) == 2 and options.check_adjoint:
        report.results += adjoint_results(probes, built["reverse"], products["reverse"],
                                          built["forward"], products["forward"], _epsilon(ev),
                                          options.nondet_tol, report.magnitudes)
    if options.check_detached:
        report.results += checks.detached(ev, numerical, options.atol)
    _explain_fast(ev, report, options)


def _explain_fast(ev: Evaluator, report: Report, options: Options) -> None:
    """When a fast check fails, compute the slow Jacobians and report those."""
    failing = [r for r in report.failures if r.check in ("fast-reverse", "fast-forward")]
    if not failing:
        return
    numerical = report.jacobians["slow-numerical"] = central_blocks(ev, options.eps)
    slow_jacobians = {}
    for result in failing:
        mode = result.check.removeprefix("fast-")
        if mode not in slow_jacobians:
            produce = ad_producer(SIDES[mode], options)
            slow_jacobians[mode] = report.jacobians[f"slow-{mode}"] = produce(ev)
        full = compare_pair(mode, numerical, slow_jacobians[mode], result.out_idx, result.in_idx,
                            options.atol, options.rtol)
        # (a kink at the inputs is named as the slow check names it, not "some elements")
        full = name_kinks(ev, [full])[0]
        full.order = ev.problem.order
        scalars = (f"fast-mode scalars v^T J u: numerical {result.expected.ravel().tolist()}, "
                   f"{mode} {result.actual.ravel().tolist()}")
        result.expected, result.actual = full.expected, full.actual
        result.diagnosis = full.diagnosis
        if full.passed:
            result.detail = (f"{scalars}; the slow {mode}-mode Jacobian agrees with numerical "
                             "within atol/rtol, so the error is below the slow tolerances; "
                             "rerun with fast_mode=False to accept it")
        else:
            result.detail = f"{scalars}\n  slow check: " + describe(full, ev.problem.name)


def other_checks(ev: Evaluator, report: Report, rng, options: Options, scaling: dict,
                 undefined: bool) -> None:
    """Scaling, undefined gradients, gradient dtypes, batched products and a
    Function's own vmap rule."""
    backward, forward = options.check_backward_ad, options.check_forward_ad
    if scaling:
        report.results += checks.scaling(ev, scaling, _epsilon(ev), options.nondet_tol,
                                         report.magnitudes)
    if undefined:
        report.results += checks.undefined_grad(ev)
    if backward and options.check_grad_dtypes:
        report.results += checks.grad_dtypes(ev)
    if backward and options.check_batched_grad:
        report.results += checks.batched_products(ev, REVERSE, rng, options.atol, options.rtol)
    if forward and options.check_batched_forward_grad:
        engine = ev.problem.engine
        if not engine.supports_batched_forward_grad:
            raise UncheckableError(
                f"{ev.problem.name}: check_batched_forward_grad needs vmap over forward AD, "
                f"which {engine.name} does not have; pass check_batched_forward_grad=False")
        report.results += checks.batched_products(ev, FORWARD, rng, options.atol, options.rtol)
    if options.check_vmap_rule and not judged(ev, "vmap-rule", options.nondet_tol):
        found, partial = vmap_rule_results(ev, options.nondet_tol)
        report.results += found
        report.partial += [partial] if partial else []
    if backward and options.check_inputs_alone and not judged(ev, "alone", options.nondet_tol):
        found, partial = alone_results(ev, rng, options.nondet_tol)
        report.results += found
        report.partial += [partial] if partial else []


def advise(ev: Evaluator, report: Report, options: Options) -> None:
    """Failures against differences at a fixed step of a formula narrower than
    double precision: say why they may be the dtype's, and what judges it."""
    if options.precise or options.reference is not None or not is_narrow(ev.problem):
        return
    p = ev.problem
    dtype = formula_dtype(p)
    advice = (f"the function runs in {dtype} (spacing {formula_epsilon(p):.1e} at 1): "
              f"differences at eps={options.eps:g} cannot resolve it; precise=True judges "
              f"the {dtype} formula within the rounding its dtype allows")
    for result in report.failures:
        if result.against == "numerical" and result.check != "reentrant":
            result.detail = advice if result.detail is None else f"{result.detail}\n  {advice}"


def no_differentiable_output(ev: Evaluator, report: Report, options: Options) -> None:
    """No output requires grad: only check that none depends on an input."""
    if options.check_detached:
        numerical = report.jacobians["numerical"] = central_blocks(ev, options.eps)
        report.results += checks.detached(ev, numerical, options.atol)
    if report.passed:
        raise UncheckableError(
            f"{ev.problem.name}: no output requires grad: every output depends on no input "
            "that requires grad, so there is nothing to check; make the outputs depend on "
            "the inputs through differentiable operations")
