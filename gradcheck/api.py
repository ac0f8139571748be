"""gradcheck(), gradgradcheck() and check(): the public entry points.

``check(func, inputs, **keywords)`` validates its keywords into an
``Options`` and calls ``run``; ``gradcheck()`` and ``gradgradcheck()``
translate PyTorch's flags into ``Options`` once and raise on failure. ``run``
is the one place a check is put together (see ``gradcheck.flow`` for the
order of its steps); a module or nested inputs are first flattened into
named inputs (``gradcheck.core.modules``); a front end that checks something else
(a registry's samples) builds ``Options`` and calls ``run``.
"""
from __future__ import annotations

import secrets
import sys
import time
from contextlib import contextmanager
from dataclasses import replace
from contextvars import ContextVar

import numpy as np

from adcheck.gradcheck.verdict import (checks, compiled, constsaves, faults, inputsign, lostrepeats,
                                      noise, phase, pointvalue, triangle)
from adcheck.gradcheck import flow
from adcheck.gradcheck.core import fperrors, grids, heap, interrupt, modules
from adcheck.gradcheck.errors import GradcheckError, UncheckableError
from adcheck.gradcheck.core.batching import batched, batching_enabled
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.options import CHECK_EXPLORE, Options
from adcheck.gradcheck.explore import explore
from adcheck.gradcheck.large.resolved import WHOLE_COORDINATES, poorly_resolved, whole_needed
from adcheck.gradcheck.core.problem import Problem, function_name
from adcheck.gradcheck.core.reuse import first_order_judged, judged, mark_judged
from adcheck.gradcheck.core.seeding import check_rng
from adcheck.gradcheck.verdict.diagnosis import said_of_the_first_derivative
from adcheck.gradcheck.verdict.report import Report


def check(func, inputs, **keywords) -> Report:
    """Check the derivatives of ``func`` at ``inputs`` and return a ``Report``.

    Keywords, with PyTorch's meaning and defaults where PyTorch has them:
    ``eps`` (1e-6), ``atol`` (1e-5), ``rtol`` (1e-3), ``nondet_tol`` (0.0),
    ``check_undefined_grad`` (True), ``check_grad_dtypes``,
    ``check_batched_grad``, ``check_batched_forward_grad``,
    ``check_forward_ad`` (False), ``check_backward_ad`` (True), ``fast_mode`` (False). Ours:

    - ``precise`` (False): Richardson-extrapolated numerical Jacobian with a
      per-entry error estimate, and a tolerance derived from it (see
      ``gradcheck.numerics.precise``) instead of ``atol``/``rtol``. Slow mode only;
      10 to 28 function calls per input coordinate instead of 2. Catches
      relative formula errors of 1e-6 in float64 and complex128.
    - ``reference``: an mpmath reference (``gradcheck.numerics.reference``) used instead
      of finite differences (with ``precise=True``: the AD rounding allowance alone).
    - ``probes`` (1): random probes (fast mode, the adjoint check); ``seed``: theirs (fresh
      by default; ``Report.seed`` repeats the check).
    - ``check_scaling`` (True): the vjp scales with grad_output and the jvp with the
      tangent. ``check_adjoint`` (True): when both modes are checked,
      ``<v, J_forward u> == <J_reverse^T v, u>`` to rounding.
    - ``check_detached`` (True): an output that does not require grad must not depend on an
      input that does (a stray ``.detach()``; PyTorch's gradcheck ignores such outputs); pass
      False for outputs declared non-differentiable (``mark_non_differentiable``, or an op's
      saved statistics such as ``native_layer_norm``'s mean and inverse std).
      ``check_vmap_rule`` (True): a Function's own ``vmap`` rule equals one call per
      example (``verdict.vmaprule``). ``check_inputs_alone`` (True; False in
      ``gradcheck()``): each input alone requiring grad gets its gradient (``verdict.alone``).
    - ``order`` (1): 2 checks the first derivative, as ``gradgradcheck`` (``grad_outputs``
      as there); failures are then named "reverse over reverse" or "forward over reverse".
      ``name``: the name in messages (default: the function's).
    - ``memory_budget`` (512 MiB, in bytes): arrays held at once (``gradcheck.core.budget``).
    - ``jacobian`` (``"auto"``): how the slow Jacobians are built.
      ``"dense"``: every entry, in chunks when the blocks exceed the budget;
      ``"compressed"``: ``J S`` for groups of columns that share no row of
      the formula's sparsity pattern, every entry still compared (in chunks
      beyond the budget: ``gradcheck.large.compressed``); ``"probed"``: ``J U`` for ``probes``
      Gaussian directions, with the odds that a wrong entry escapes in
      ``Report.escape`` (``gradcheck.large.probed``, ``lowprobed``); ``"auto"``: dense for small
      blocks, compressed for large ones whose pattern pays, else dense in chunks;
      probed where that would exceed half of ``time_limit`` (seconds; None).
    - ``input_names``: a name per input, in messages, ``Result.in_name``, ``Report.input_names``;
      ``buffers`` (False): with a module, also check its floating point buffers.
    - ``explore`` (``"quick"``, True, False), ``explore_budget`` (20 s), ``explore_reference``
      (an mpmath reference judging failing explored points): ``gradcheck.explore``.
    - ``same_as``: a function with the same derivatives, checked itself (an in-place
      variant's op): compared with its autograd Jacobian instead (``gradcheck.core.sameas``).

    ``func`` may be a torch or refengine ``nn.Module``: its floating point
    parameters that require grad are then checked too, after the inputs, each
    named as ``named_parameters()`` names it; and an input may be a nested
    dict, list or tuple of tensors (a JAX pytree on JAX), checked leaf by
    leaf, each leaf named by its path (see ``gradcheck.core.modules``).

    An unknown keyword raises ``TypeError`` naming the known ones; a value out
    of range, and bad calls (no input requiring grad, NumPy arrays, integer
    inputs, no output depending on an input), raise ``ValueError``; a
    function or formula that raises gives ``GradcheckError``.
    """
    return run(func, inputs, Options.from_keywords(**{**CHECK_DEFAULTS, **keywords}))


#: what ``check()`` does by default beyond ``gradcheck()``: the quick explore pass
#: and each input alone requiring grad
CHECK_DEFAULTS = {"explore": CHECK_EXPLORE, "check_inputs_alone": True}


#: inside ``recording_faults()``: the exceptions ``check`` raised, for the caller to
#: read their tracebacks (the runner keeps the user's frames of an error's)
_FAULTS: ContextVar[list | None] = ContextVar("adcheck_recorded_faults", default=None)


@contextmanager
def recording_faults():
    """In the block, every ``Exception`` (or ``SystemExit``) that leaves ``check``
    is appended, as raised, to the list this yields."""
    seen: list = []
    token = _FAULTS.set(seen)
    try:
        yield seen
    finally:
        _FAULTS.reset(token)


def run(func, inputs, options: Options) -> Report:
    """``check`` with its keywords already validated into ``options``; torch.func's
    transform stack is left as deep as it was (``interrupt.kept_level``)."""
    with batched(options.batching and batching_enabled()), fperrors.defaults_for_raising(), \
            interrupt.kept_level():
        heap.keep_freed_blocks()   # batches reuse freed pages (see gradcheck.core.heap)
        try:
            report = _run(func, inputs, options)
            report = _settled_densely(func, inputs, options, report)
            report = _judged_whole(func, inputs, options, report)
        except (Exception, SystemExit) as exc:
            seen = _FAULTS.get()
            if seen is not None:
                seen.append(exc)
            raise
        finally:
            heap.release()
        if options.explore and "same_as" not in report.jacobians and \
                not lacks_double_backward(report):
            # (judged by same_as, whose own check explores the formula both share; a
            # function without a double backward has it nowhere)
            # a room above this one: it is handed ``run`` instead of importing it
            explore(run, func, inputs, options, report, quick_only=options.explore == "quick",
                    progress=sys.stderr.isatty())
    return report


#: a failed probed check of a narrower formula is judged again on whole Jacobians
#: when they have at most this many real input coordinates (in a second-order
#: check: the inputs' and the grad_outputs'): gelu's 10 x 10 in bfloat16, 200,
#: takes under a second more
SETTLE_COORDINATES = 512


def _settled_densely(func, inputs, options: Options, report: Report) -> Report:
    """``report``, or the same check on whole Jacobians when ``report`` is a
    probed check of a formula narrower than double precision that failed only
    in its Jacobians, and whole Jacobians are small (``SETTLE_COORDINATES``).

    A probed cell's allowance for the formula's rounding is measured on the
    cells (``gradcheck.large.lowprobed``), a coarser measure than the one
    every entry gets on whole Jacobians: torch's bfloat16 gelu (tanh)
    forward over reverse failed one cell by 1.2 times its allowance while
    each entry is within 0.87 of its own. Whole Jacobians are the finer
    judge of the same question, so their verdict stands, and says what the
    cells found (``Report.settled``)."""
    if report.passed or report.plan != "probed" or not _narrow(report) or \
            any(f.check not in ("reverse", "forward") for f in report.failures):
        return report
    numerical = report.jacobians.get("numerical")
    layout = numerical.layout if numerical is not None else None
    if layout is None or sum(layout.in_size(i) for i in layout.in_shapes) > SETTLE_COORDINATES:
        return report
    first = report.failures[0]
    seeds = next(iter((numerical.seeds or {}).values()), None)
    directions = seeds.count if seeds is not None else options.probes
    cells = (f"probed along {directions} directions, {len(report.failures)} comparison"
             f"{'s' if len(report.failures) > 1 else ''} failed (the first, {first.mode} "
             f"mode: cell error {first.max_error:.1e}, tolerance {first.tolerance:.1e})")
    try:
        dense = _run(func, inputs, replace(options, jacobian="dense", seed=report.seed))
    except GradcheckError:   # (whole Jacobians out of the budget, say: the cells stand)
        return report
    verdict = "passed" if dense.passed else "failed too"
    dense.settled = (f"{cells}; judged again on whole Jacobians, each entry against its own "
                     f"rounding allowance: {verdict}")
    return dense


def _judged_whole(func, inputs, options: Options, report: Report) -> Report:
    """``report``, or the same check on whole Jacobians when ``report`` passed
    precisely on compressed or probed cells of a double-precision formula that
    resolved little or nothing at inputs far above a unit
    (``gradcheck.large.resolved``). Where whole Jacobians are too large to
    build here, a pass that resolved nothing is refused and one that resolved
    little says so; as is a pass on whole Jacobians that resolved little
    (``poorly_resolved``)."""
    # (a narrower formula's cells resolve its own rounding, above POOR by nature)
    found = None if _narrow(report) else whole_needed(report)
    if found is None:
        poor = None if _narrow(report) else poorly_resolved(report)
        if poor is not None and report.cell_reach[1] is None:
            raise UncheckableError(
                f"{report.name}: {poor}, so this check could not have failed: check it at "
                "smaller inputs, or against an mpmath reference (reference=)")
        report.settled = poor or report.settled
        return report
    layout = report.jacobians["numerical"].layout
    coordinates = sum(layout.in_size(i) for i in layout.in_shapes)
    if coordinates > WHOLE_COORDINATES:
        return _unjudged(report, found, f"{coordinates} input coordinates, above the "
                                        f"{WHOLE_COORDINATES} judged again whole")
    try:
        dense = _run(func, inputs, replace(options, jacobian="dense", seed=report.seed))
    except UncheckableError:
        raise
    except GradcheckError as exc:
        return _unjudged(report, found, str(exc)[:200])
    verdict = "passed" if dense.passed else "failed"
    dense.settled = f"{found}; judged again on whole Jacobians: {verdict}"
    return dense


def _unjudged(report: Report, found: str, why: str) -> Report:
    """``report`` saying its cells were not judged again whole (``why``), or,
    where they resolved nothing, the check refused."""
    cause = (f"{found}; whole Jacobians, which difference such entries on a unit's steps "
             f"too, were not built ({why})")
    if report.cell_reach[1] is None:
        raise UncheckableError(
            f"{report.name}: {cause}, so this check could not have failed: check a slice "
            "of the inputs (jacobian='dense', --jacobian dense)")
    report.settled = cause
    return report


def _narrow(report: Report) -> bool:
    """Whether the checked formula is narrower than double precision."""
    precision = getattr(report.jacobians.get("numerical"), "precision", None)
    return precision is not None and precision.formula not in ("float64", "complex128")


def _run(func, inputs, options: Options) -> Report:
    start = time.perf_counter()
    func, inputs, names, name = modules.prepare(func, inputs, options)
    seed = options.seed
    if seed is None:  # fresh, and below 2**53 so that JSON readers keep it exact
        seed = secrets.randbits(53)   # (os.urandom: a fifth of a SeedSequence's time)
    rng = check_rng(seed)
    original, primals, inside = func, len(inputs), {}
    if options.order == 2:
        from adcheck.gradcheck.core.secondorder import first_derivative
        name = name or function_name(func)
        func, inputs = first_derivative(func, inputs, options.grad_outputs, rng, name)
        # (of a function computing in float32 inside: the first derivative's values are
        # doubles, but its dependence on the inputs carries float32's rounding)
        narrow = func.narrow_inside()
        inside = {(2, None): narrow} if narrow else {}
        if options.same_as is not None:   # its first derivative, at the same grad_outputs
            from adcheck.gradcheck.core.sameas import twin_first_derivative
            twin = twin_first_derivative(options.same_as, inputs[:primals], inputs[primals:],
                                         rng, name)
            options = replace(options, same_as=twin)
    with grids.known(inside):
        problem = Problem(func, inputs, name, order=options.order,
                          warn_precision=not options.precise)
        report = Report(problem.name, problem.engine.name, seed=seed,
                        settings=options.settings(), order=options.order)
        if not _without_double_backward(func, report, options):
            _judged(problem, report, rng, options, (original, func, inputs[:primals]))
        for result in report.results:
            result.order = options.order
        _named(report, problem, original, names)
        report.computed_in = problem.computed_inside()
    report.counts = dict(problem.counts)
    report.seconds = time.perf_counter() - start
    return report


def _judged(problem: Problem, report: Report, rng, options: Options, functions) -> None:
    """Every check of ``options`` on ``problem``, into ``report``; at second order
    its failures said of the first derivative, and named where their cause is
    known. ``functions``: the function as given, the function checked (its first
    derivative at second order) and the given inputs."""
    original, first, primal_inputs = functions
    primals = len(primal_inputs)
    ev = Evaluator(problem, options.memory_budget, origin=(original, options.order))
    try:
        _checks(ev, report, rng, options)
    except GradcheckError as exc:
        if not problem.mutations:
            raise
        # an input changed in place: what failed after it is its consequence
        # (torch: "modified by an inplace operation"), and the report says so
        report.results += faults.mutation_results(problem)
        for result in report.results[-len(problem.mutations):]:
            result.detail = f"after that: {exc}"
    else:
        report.results += faults.mutation_results(problem)
    report.results += faults.grad_output_results(problem)
    if options.order == 2 and not report.passed:
        for result in report.failures:
            result.diagnosis = said_of_the_first_derivative(result.diagnosis, result.mode)
        # a failure where the first derivative is rounding noise is no evidence
        excuse = noise.noise_only(ev, report.failures)
        if excuse is not None:
            raise UncheckableError(excuse)
        _name_missing_double_backward(first, report, primals)
        _name_constant_saves(problem.engine, original, first, primal_inputs, report, primals)


def _named(report: Report, problem: Problem, original, names) -> None:
    """The inputs' names on the results, and each failure whose shape says its
    cause (a module's design, dropped repeats, a triangle read, a sign at
    negative inputs, a phase, torch.compile's lost tangents) said so."""
    modules.name_spectral_norms(report, original)
    modules.name_results(report, names, len(problem.inputs))
    modules.name_padding_rows(report, original)
    for name in (lostrepeats.name, triangle.name, inputsign.name, phase.name, compiled.name):
        name(report, problem)


#: the diagnosis of a second-order failure when the backward builds no graph
NO_DOUBLE_BACKWARD = faults.NO_DOUBLE_BACKWARD


def _without_double_backward(first, report: Report, options: Options) -> bool:
    """Whether second-order ``report`` is done before any Jacobian: the first
    derivative's one call at the given inputs built no graph at all
    (``secondorder.builds_no_graph``), so the function has no double backward;
    ``report`` then fails in each side checked, saying so. A Jacobian of such a
    first derivative costs a forward and a backward per coordinate (zuko's UNAF
    spent its 200 s there) and judges nothing: its columns in the grad_outputs,
    of a backward that is not exactly linear in them (an iterative solver's),
    even failed as discontinuous, and the check with them."""
    if options.order != 2 or not getattr(first, "builds_no_graph", lambda: False)():
        return False
    report.double_backward = False
    report.results += [faults.no_double_backward_result(side.mode)
                       for side in flow.sides(options)]
    return True


def _name_missing_double_backward(first, report: Report, primals: int) -> None:
    """Say so in the failures of a second-order check, and in
    ``report.double_backward``, when the first derivative has no graph back
    to the inputs (``secondorder.first_derivative``'s ``builds_graph``): the
    failures are then that, not a wrong second-derivative formula."""
    builds = getattr(first, "builds_graph", lambda: None)()
    report.double_backward = builds
    if builds is not False:
        return
    for result in report.failures:
        # an input's derivative is then missing (zero); a grad_output's too where
        # the backward's result has no graph at all (@once_differentiable), or
        # does not even require grad (NumPy inside: the detached check finds it)
        missing = result.actual is not None and not np.any(result.actual)
        if result.in_idx is not None and (result.in_idx < primals or missing or
                                          result.check == "detached"):
            result.diagnosis = NO_DOUBLE_BACKWARD


def _name_constant_saves(E, func, first, primal_inputs, report: Report, primals: int) -> None:
    """Diagnose a second-order check's failures in the inputs' columns where a
    custom Function keeps from its forward a tensor that changes with the inputs
    but has no history (``verdict.constsaves``): its double backward misses
    that tensor's derivative, whatever the formulas. Where the gradients have no
    graph of the inputs at all, only when they have one of the grad_outputs (a
    backward in the engine's operations, ``g * ctx.y``: a double backward that
    is wrong, not one that was left out, as NumPy inside or
    ``@once_differentiable`` leave it: ``_name_missing_double_backward``)."""
    if report.double_backward is False and not first.reaches_grad_outputs():
        return
    found = constsaves.constant_saves(E, func, primal_inputs)
    if not found:
        return
    text = constsaves.describe(found)
    for result in report.failures:
        if result.in_idx is not None and result.in_idx < primals:
            result.diagnosis = text


def lacks_double_backward(report: Report) -> bool:
    """Whether a failed second-order ``report`` failed only because the function
    has no double backward (its backward builds no graph of the inputs)."""
    return report.double_backward is False and all(
        f.diagnosis == NO_DOUBLE_BACKWARD for f in report.failures)


def _checks(ev: Evaluator, report: Report, rng, options: Options) -> None:
    """Every check of ``options`` in order (see ``gradcheck.flow``)."""
    problem = ev.problem
    if not problem.diff_out:
        flow.no_differentiable_output(ev, report, options)
        return
    # (what an earlier check of the sample judged right is not judged again: core.reuse)
    def new(what):
        return not judged(ev, what, options.nondet_tol)
    determinism = new("deterministic") and not first_order_judged(
        ev, {"deterministic", "reentrant"}, options.nondet_tol)
    if determinism:
        report.results += faults.determinism_results(ev, options.nondet_tol)
    sides = [s for s in flow.sides(options) if new(f"scaling-{s.mode}")]
    scaling = checks.scaling_probes(ev, rng, sides) if options.check_scaling else {}
    undefined = options.check_backward_ad and options.check_undefined_grad and \
        new("undefined-grad")
    if undefined:
        checks.request_undefined_grad(ev)
    (flow.fast if options.fast else flow.slow)(ev, report, rng, options)
    flow.other_checks(ev, report, rng, options, scaling, undefined)
    flow.advise(ev, report, options)
    report.results += faults.nonfinite_results(problem, report.jacobians)
    # (a passing first order's premise; a property of the function at the point, so
    # judged once for the sample's first-order checks)
    point = problem.order == 1 and not report.failures and new(POINT_VALUE)
    if point:
        report.results += pointvalue.point_results(ev)
    report.batching = dict(problem.batching)
    mark_judged(ev, _judged_right(report, determinism, point), options.nondet_tol)


#: ``core.reuse.judged``'s name of the point check (``verdict.pointvalue``), which
#: says nothing when it passes
POINT_VALUE = "point-value"


def _judged_right(report: Report, determinism: bool, point: bool = False) -> set:
    """What ``report`` judged and found right that a later check of the same
    sample need not judge again (``core.reuse.judged``): reentrancy, scaling by
    side, undefined gradients, a Function's own vmap rule (each with results,
    all passed), and the forward's determinism and the value at the point
    (``point``: the point check ran), which say nothing when they pass."""
    right: dict = {}
    for r in report.results:
        name = f"scaling-{r.mode}" if r.check == "scaling" else r.check
        if name in ("reentrant", "undefined-grad", "scaling-reverse", "scaling-forward",
                    "vmap-rule", "alone"):
            right[name] = right.get(name, True) and bool(r.passed)
    found = {name for name, passed in right.items() if passed}
    if determinism and not any(r.check == "deterministic" for r in report.failures):
        found.add("deterministic")
    if point and not any(r.check == "discontinuous" for r in report.failures):
        found.add(POINT_VALUE)
    return found


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False,
              check_forward_ad=False, check_backward_ad=True, fast_mode=False,
              **extras) -> bool:
    """A drop-in for ``torch.autograd.gradcheck``: same arguments and defaults.

    Returns True when every check passes. Otherwise raises ``GradcheckError``
    (its ``report`` attribute holds the ``Report``), or returns False when
    ``raise_exception=False``. ``extras`` are ``check()``'s own keywords
    (``precise``, ``reference``, ``probes``, ``seed``, ``name``, ...).
    Unlike PyTorch, fast mode draws signed random probes (see
    ``gradcheck.core.fast`` for how likely a bug escapes).
    """
    options = Options.from_keywords(
        eps=eps, atol=atol, rtol=rtol, nondet_tol=nondet_tol,
        check_undefined_grad=check_undefined_grad, check_grad_dtypes=check_grad_dtypes,
        check_batched_grad=check_batched_grad,
        check_batched_forward_grad=check_batched_forward_grad,
        check_forward_ad=check_forward_ad, check_backward_ad=check_backward_ad,
        fast_mode=fast_mode, **extras)
    return _verdict(run(func, inputs, options), raise_exception)


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False,
                  check_batched_grad=False, check_fwd_over_rev=False,
                  check_rev_over_rev=True, fast_mode=False, **extras) -> bool:
    """A drop-in for ``torch.autograd.gradgradcheck``.

    Checks the first derivative ``(inputs, grad_outputs) -> vjp`` by
    gradcheck: reverse over reverse (``check_rev_over_rev``) and forward
    over reverse (``check_fwd_over_rev``). ``grad_outputs`` default to
    random tensors (seeded by ``seed=`` if given). Returns True, or raises
    ``GradcheckError`` (False with ``raise_exception=False``).
    ``gen_non_contig_grad_outputs`` is accepted for compatibility and has no
    effect: the generated grad_outputs are always contiguous.
    """
    options = Options.from_keywords(
        order=2, grad_outputs=grad_outputs, eps=eps, atol=atol, rtol=rtol,
        nondet_tol=nondet_tol, check_undefined_grad=check_undefined_grad,
        check_grad_dtypes=check_grad_dtypes, check_batched_grad=check_batched_grad,
        check_forward_ad=check_fwd_over_rev, check_backward_ad=check_rev_over_rev,
        fast_mode=fast_mode, **extras)
    return _verdict(run(func, inputs, options), raise_exception)


def _verdict(report: Report, raise_exception: bool) -> bool:
    if report.passed or not raise_exception:
        return bool(report.passed)
    raise GradcheckError(report.message(), report)
