"""gradcheck(), gradgradcheck() and check(): the public entry points."""
from __future__ import annotations

import time

import numpy as np

from gradcheck import checks
from gradcheck.adjoint import adjoint_results, slow_projections
from gradcheck.compare import compare_jacobians, compare_pair
from gradcheck.coords import rounding_unit
from gradcheck.errors import GradcheckError
from gradcheck.fast import draw_probes, fast_forward, fast_numerical, fast_reverse
from gradcheck.forward import forward_blocks
from gradcheck.numerical import central_blocks
from gradcheck.precise import precise_tolerances
from gradcheck.problem import Problem
from gradcheck.report import Report, describe
from gradcheck.reverse import reverse_blocks


def _epsilon(problem: Problem) -> float:
    dtypes = [problem.arrays[i].dtype for i in problem.diff_in]
    dtypes += [problem.out_arrays[o].dtype for o in problem.float_out]
    return max(rounding_unit(d) for d in dtypes)


def _magnitudes(numerical, scale=None, layout=None) -> dict:
    """The floor of rounding tolerances, per block: the largest Frobenius norm
    of any numerical block (rounding in one block's AD result scales with the
    terms it shares with the others, even where that block is zero).

    In fast mode only ``||v * J u||`` is known; times ``sqrt(m n)`` it is of
    the order of ``||J||_F``.
    """
    if scale is None:
        norms = {key: float(np.linalg.norm(numerical[key])) for key in numerical.blocks}
    else:
        norms = {(o, i): float(np.max(s) * np.sqrt(layout.out_size(o) * layout.in_size(i)))
                 for (o, i), s in scale.items()}
    largest = max(norms.values(), default=0.0)
    return dict.fromkeys(norms, largest)


def _numerical(problem: Problem, opts: dict):
    if opts["reference"] is not None:
        from gradcheck.reference import reference_blocks
        return reference_blocks(problem, opts["reference"])
    if opts["precise"]:
        from gradcheck.richardson import richardson_blocks
        return richardson_blocks(problem)
    return central_blocks(problem, opts["eps"])


def _slow(problem: Problem, report: Report, rng, opts: dict):
    numerical = _numerical(problem, opts)
    report.jacobians[numerical.mode] = numerical
    report.magnitudes = _magnitudes(numerical)
    tols = precise_tolerances(numerical, _epsilon(problem)) if opts["precise"] else None
    atol, rtol = opts["atol"], opts["rtol"]
    rev = fwd = None
    if opts["check_backward_ad"]:
        rev = report.jacobians["reverse"] = reverse_blocks(problem)
        report.results += compare_jacobians("reverse", numerical, rev, atol, rtol, tols)
        again = reverse_blocks(problem)
        report.results += checks.reentrant(rev, again, opts["nondet_tol"])
    if opts["check_forward_ad"]:
        fwd = report.jacobians["forward"] = forward_blocks(problem)
        report.results += compare_jacobians("forward", numerical, fwd, atol, rtol, tols)
    if rev is not None and fwd is not None and opts["check_adjoint"]:
        probes = draw_probes(problem, rng, opts["probes"])
        rev_p, jtv, fwd_p, ju = slow_projections(probes, rev, fwd, problem.layout)
        report.results += adjoint_results(probes, rev_p, jtv, fwd_p, ju, _epsilon(problem),
                                          opts["nondet_tol"], report.magnitudes)
    report.results += checks.detached(problem, numerical, atol)
    if numerical.mode == "reference":
        _who_is_wrong(problem, report, opts)


def _who_is_wrong(problem: Problem, report: Report, opts: dict):
    """Against a reference, say whether finite differences would have agreed."""
    reference = report.jacobians["reference"]
    failing = [r for r in report.failures if r.against == "reference"]
    if not failing:
        return
    fd = report.jacobians["numerical"] = central_blocks(problem, opts["eps"])
    for result in failing:
        agree = compare_pair("numerical", reference, fd, result.out_idx, result.in_idx,
                             opts["atol"], opts["rtol"])
        if agree.passed:
            result.detail = ("finite differences agree with the mpmath reference: the "
                             f"{result.mode}-mode formula is wrong")
        else:
            result.detail = (f"finite differences disagree with the mpmath reference too (max "
                             f"error {agree.max_error:.1e}): judge by the reference")


def _fast(problem: Problem, report: Report, rng, opts: dict):
    probes = draw_probes(problem, rng, opts["probes"])
    numerical, scale = fast_numerical(problem, probes, opts["eps"])
    report.jacobians["numerical"] = numerical
    report.magnitudes = _magnitudes(numerical, scale, problem.layout)
    tols = {key: opts["atol"] + opts["rtol"] * s for key, s in scale.items()}
    frev = ffwd = None
    if opts["check_backward_ad"]:
        frev, jtv = fast_reverse(problem, probes)
        report.results += compare_jacobians("fast-reverse", numerical, frev, 0, 0, tols)
        again, _ = fast_reverse(problem, probes)
        report.results += checks.reentrant(frev, again, opts["nondet_tol"])
        report.jacobians["fast-reverse"] = frev
    if opts["check_forward_ad"]:
        ffwd, ju = fast_forward(problem, probes)
        report.results += compare_jacobians("fast-forward", numerical, ffwd, 0, 0, tols)
        report.jacobians["fast-forward"] = ffwd
    if frev is not None and ffwd is not None and opts["check_adjoint"]:
        report.results += adjoint_results(probes, frev, jtv, ffwd, ju, _epsilon(problem),
                                          opts["nondet_tol"], report.magnitudes)
    report.results += checks.detached(problem, numerical, opts["atol"])
    _explain_fast(problem, report, opts)


def _explain_fast(problem: Problem, report: Report, opts: dict):
    """When a fast check fails, compute the slow Jacobians and report those."""
    failing = [r for r in report.failures if r.check in ("fast-reverse", "fast-forward")]
    if not failing:
        return
    numerical = report.jacobians["slow-numerical"] = central_blocks(problem, opts["eps"])
    slow = {}
    for result in failing:
        mode = result.check.removeprefix("fast-")
        if mode not in slow:
            build = reverse_blocks if mode == "reverse" else forward_blocks
            slow[mode] = report.jacobians[f"slow-{mode}"] = build(problem)
        full = compare_pair(mode, numerical, slow[mode], result.out_idx, result.in_idx,
                            opts["atol"], opts["rtol"])
        scalars = (f"fast-mode scalars v^T J u: numerical {result.expected.ravel().tolist()}, "
                   f"{mode} {result.actual.ravel().tolist()}")
        result.expected, result.actual = full.expected, full.actual
        result.diagnosis = full.diagnosis
        if full.passed:
            result.detail = (f"{scalars}; the slow {mode}-mode Jacobian agrees with numerical "
                             "within atol/rtol, so the error is below the slow tolerances; "
                             "rerun with fast_mode=False to accept it")
        else:
            result.detail = f"{scalars}\n  slow check: " + describe(full, problem.name)


def _extra_checks(problem: Problem, report: Report, rng, opts: dict, scaling: dict):
    backward, forward = opts["check_backward_ad"], opts["check_forward_ad"]
    if scaling:
        report.results += checks.scaling(problem, scaling, _epsilon(problem),
                                         opts["nondet_tol"], report.magnitudes)
    if backward and opts["check_undefined_grad"]:
        report.results += checks.undefined_grad(problem)
    if backward and opts["check_grad_dtypes"]:
        report.results += checks.grad_dtypes(problem)
    if backward and opts["check_batched_grad"]:
        report.results += checks.batched_grad(problem, rng, opts["atol"], opts["rtol"])
    if forward and opts["check_batched_forward_grad"]:
        if not problem.engine.supports_batched_forward_grad:
            raise ValueError(f"{problem.name}: check_batched_forward_grad needs vmap over "
                             f"forward AD, which {problem.engine.name} does not have; pass "
                             "check_batched_forward_grad=False")
        report.results += checks.batched_forward_grad(problem, rng, opts["atol"], opts["rtol"])


def _no_differentiable_output(problem: Problem, report: Report, opts: dict):
    numerical = report.jacobians["numerical"] = central_blocks(problem, opts["eps"])
    report.results += checks.detached(problem, numerical, opts["atol"])
    if report.passed:
        raise ValueError(
            f"{problem.name}: no output requires grad: every output depends on no input "
            "that requires grad, so there is nothing to check; make the outputs depend on "
            "the inputs through differentiable operations")


def check(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, nondet_tol=0.0,
          check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
          check_batched_forward_grad=False, check_forward_ad=False, check_backward_ad=True,
          fast_mode=False, precise=False, reference=None, probes=1, seed=None, name=None,
          check_scaling=True, check_adjoint=True, order=1, grad_outputs=None) -> Report:
    """Check the derivatives of ``func`` at ``inputs`` and return a ``Report``.

    Keywords, with PyTorch's meaning and defaults where PyTorch has them:
    ``eps`` (1e-6), ``atol`` (1e-5), ``rtol`` (1e-3), ``nondet_tol`` (0.0),
    ``check_undefined_grad`` (True), ``check_grad_dtypes``,
    ``check_batched_grad``, ``check_batched_forward_grad``,
    ``check_forward_ad`` (False), ``check_backward_ad`` (True), ``fast_mode``
    (False). Ours:

    - ``precise`` (False): Richardson-extrapolated numerical Jacobian with a
      per-entry error estimate, and a tolerance derived from it (see
      ``gradcheck.precise``) instead of ``atol``/``rtol``. Slow mode only;
      16 to 28 function calls per input coordinate instead of 2. Catches
      relative formula errors of 1e-6 in float64 and complex128.
    - ``reference``: an mpmath reference (convention: ``gradcheck.reference``)
      used instead of finite differences; with ``precise=True`` the
      tolerance is then the AD rounding allowance alone.
    - ``probes`` (1): random probes in fast mode and for the adjoint check.
    - ``seed``: seed of the random probes; by default a fresh one per run,
      recorded in ``Report.seed``.
    - ``check_scaling`` (True): the vjp scales with grad_output and the jvp
      with the tangent. ``check_adjoint`` (True): when both modes are
      checked, ``<v, J_forward u> == <J_reverse^T v, u>`` to rounding.
    - ``order`` (1): 2 checks the first derivative itself (the function
      ``gradgradcheck`` checks), with ``grad_outputs`` as in gradgradcheck.
    - ``name``: the name used in messages (default: the function's).

    Bad calls (no input requiring grad, NumPy arrays, integer inputs, no
    output depending on an input) raise ``ValueError``; a function or
    formula that raises gives ``GradcheckError``.
    """
    opts = {k: v for k, v in locals().items() if k not in ("func", "inputs")}
    return _run(func, inputs, opts)


def _run(func, inputs, opts: dict) -> Report:
    if opts["order"] not in (1, 2):
        raise ValueError(f"check: order must be 1 or 2, not {opts['order']!r}")
    if not opts["check_forward_ad"] and not opts["check_backward_ad"]:
        raise ValueError("check: at least one of check_forward_ad and check_backward_ad "
                         "must be True")
    start = time.perf_counter()
    seed = opts["seed"]
    if seed is None:  # fresh, and below 2**53 so that JSON readers keep it exact
        seed = int(np.random.SeedSequence().entropy % 2**53)
    rng = np.random.default_rng(seed)
    if opts["order"] == 2:
        from gradcheck.secondorder import first_derivative
        func, inputs, opts["name"] = first_derivative(func, inputs, opts["grad_outputs"], rng,
                                                      opts["name"])
    problem = Problem(func, inputs, opts["name"], differentiates_inside=opts["order"] == 2)
    report = Report(problem.name, problem.engine.name, seed=seed,
                    settings={k: v for k, v in opts.items() if k != "reference"})
    if not problem.diff_out:
        _no_differentiable_output(problem, report, opts)
        report.counts = dict(problem.counts)
        report.seconds = time.perf_counter() - start
        return report
    backward, forward = opts["check_backward_ad"], opts["check_forward_ad"]
    scaling = checks.scaling_probes(problem, rng, backward, forward) if opts["check_scaling"] \
        else {}
    if backward and opts["check_undefined_grad"]:
        checks.request_undefined_grad(problem)
    if opts["fast_mode"] and not opts["precise"] and opts["reference"] is None:
        _fast(problem, report, rng, opts)
    else:
        _slow(problem, report, rng, opts)
    _extra_checks(problem, report, rng, opts, scaling)
    report.counts = dict(problem.counts)
    report.batching = dict(problem.batching)
    report.seconds = time.perf_counter() - start
    return report


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
    ``gradcheck.fast`` for how likely a bug escapes).
    """
    report = check(func, inputs, eps=eps, atol=atol, rtol=rtol, nondet_tol=nondet_tol,
                   check_undefined_grad=check_undefined_grad,
                   check_grad_dtypes=check_grad_dtypes, check_batched_grad=check_batched_grad,
                   check_batched_forward_grad=check_batched_forward_grad,
                   check_forward_ad=check_forward_ad, check_backward_ad=check_backward_ad,
                   fast_mode=fast_mode, **extras)
    return _verdict(report, raise_exception)


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
    report = check(func, inputs, order=2, grad_outputs=grad_outputs, eps=eps, atol=atol,
                   rtol=rtol, nondet_tol=nondet_tol, check_undefined_grad=check_undefined_grad,
                   check_grad_dtypes=check_grad_dtypes, check_batched_grad=check_batched_grad,
                   check_forward_ad=check_fwd_over_rev, check_backward_ad=check_rev_over_rev,
                   fast_mode=fast_mode, **extras)
    return _verdict(report, raise_exception)


def _verdict(report: Report, raise_exception: bool) -> bool:
    if report.passed:
        return True
    if raise_exception:
        raise GradcheckError(report.message(), report)
    return False
