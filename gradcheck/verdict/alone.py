"""Each input alone: an input's gradient when no other input requires grad.

A backward may compute one input's gradient only when another input needs
one: ``if ctx.needs_input_grad[0]: dl, dh = g, 2 * g`` (pytorch_wavelets'
``SFB2D`` gates its detail bands so). Every other check differentiates all
inputs at once, where that backward is right; yet in a model whose data batch
does not require grad, the parameter behind the second input gets no
gradient. So, for a function of two or more differentiated inputs, the
function is run again with each input alone requiring grad, and the vjp of a
random cotangent there must give that input the gradient the full graph
gives it (the full graph's was judged against finite differences by the
reverse check).

The two vjps run the same formula on the same values, so a correct backward
gives them equal to rounding: the tolerance is ``ALONE_ULPS`` units of the
formula's dtype relative to the largest entry of the full graph's gradient,
plus ``nondet_tol``. A missing gradient (None, or zeros where the full graph's
is not) fails whatever the tolerance.

At most ``MAX_INPUTS`` inputs are run alone (a module's parameters can be
many): the first ones and then a seeded choice of the rest; the results name
the inputs that were.
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.seeding import uniform_like
from adcheck.gradcheck.errors import GradcheckError
from adcheck.gradcheck.lowprec.lowprecision import formula_epsilon
from adcheck.gradcheck.verdict.compare import Result, compare

#: the tolerance of the comparison, in units of the formula dtype's epsilon
#: relative to the largest entry of the full graph's gradient (a sum taken in
#: another order differs by a few units; a dropped term by far more)
ALONE_ULPS = 1000.0
#: inputs run alone, at most
MAX_INPUTS = 16
WHAT = "running the function with one input alone requiring grad"


def alone_results(ev: Evaluator, rng, nondet_tol: float = 0.0) -> tuple:
    """``(results, note)``: one result per input run alone (see the module
    docstring), and what was not judged (``None``: nothing); no result for a
    function of fewer than two differentiated inputs or on an engine whose
    backward is told nothing of which inputs require grad (JAX). An input whose
    run alone the function itself refuses (it differentiates inside with
    respect to another input) is not judged alone, and the note says so."""
    p = ev.problem
    if len(p.diff_in) < 2 or p.order != 1 or not p.engine.has_needs_input_grad:
        return [], None
    cotangents = {o: uniform_like(rng, p.out_arrays[o]) for o in p.diff_out}
    full = ev.vjp(cotangents, WHAT)
    results, refused = [], []
    for i in _chosen(p.diff_in, rng):
        try:
            alone = _vjp_alone(ev, i, cotangents)
        except _Refused:
            refused.append(str(i))
            continue
        except GradcheckError as exc:
            results.append(Result("alone", "reverse", "reverse", None, i, False,
                                  diagnosis=f"with input {i} alone requiring grad: {exc}"))
            continue
        results.append(_judged(p, i, full.get(i), alone, nondet_tol))
    note = None if not refused else (
        f"input{'s' if len(refused) > 1 else ''} {', '.join(refused)} not judged alone "
        "requiring grad: the function raises unless the others require grad too")
    return results, note


class _Refused(Exception):
    """The function raised where one input alone requires grad."""


def _chosen(inputs: list, rng) -> list:
    """The inputs run alone: all, or the first ``MAX_INPUTS // 2`` and as many of
    the rest drawn by ``rng``."""
    if len(inputs) <= MAX_INPUTS:
        return list(inputs)
    rest = rng.choice(len(inputs) - MAX_INPUTS // 2, MAX_INPUTS // 2, replace=False)
    return list(inputs[:MAX_INPUTS // 2]) + [inputs[MAX_INPUTS // 2 + k] for k in sorted(rest)]


def _vjp_alone(ev: Evaluator, i: int, cotangents: dict):
    """Input ``i``'s gradient with only input ``i`` requiring grad (``None``: none)."""
    p, E = ev.problem, ev.problem.engine
    args = p.fresh_inputs({}, grad=False)
    args[i] = E.from_numpy_like(p.arrays[i], p.inputs[i], requires_grad=True)
    try:
        with E.enable_grad():
            outs = p.call(args, WHAT)
    except GradcheckError as exc:
        raise _Refused() from exc
    used = [o for o in p.diff_out if E.requires_grad(outs[o])]
    if not used:
        return None
    p.counts["vjp"] += 1
    try:
        (grad,) = E.grad([outs[o] for o in used], [args[i]],
                         [p.like_output(o, cotangents[o]) for o in used])
    except Exception as exc:
        raise GradcheckError(f"the backward raised {type(exc).__name__} ({exc})") from exc
    return None if grad is None else E.to_numpy(grad)


def _judged(p, i: int, full, alone, nondet_tol: float) -> Result:
    full = np.zeros(p.arrays[i].shape, p.arrays[i].dtype) if full is None else full
    expected = np.asarray(full).reshape(1, -1)
    if alone is None:
        if not np.count_nonzero(expected):
            return Result("alone", "reverse", "reverse", None, i, True)
        return Result("alone", "reverse", "reverse", None, i, False, float(np.abs(expected).max()),
                      None, 0.0, expected, np.zeros_like(expected),
                      diagnosis=f"with input {i} alone requiring grad its gradient is None, "
                      "where with every input requiring grad it is not: the backward gives "
                      "it a gradient only when another input requires grad (a "
                      "ctx.needs_input_grad test of the wrong index); a model whose other "
                      "input does not require grad (a data batch) gets none for it")
    actual = np.asarray(alone).reshape(1, -1)
    largest = float(np.abs(expected).max()) if expected.size else 0.0
    tol = ALONE_ULPS * formula_epsilon(p) * largest + nondet_tol
    result = compare("alone", "reverse", "reverse", None, i, expected, actual, tol)
    if not result.passed:
        result.diagnosis = (f"with input {i} alone requiring grad the backward gives it "
                            "another gradient than with every input requiring grad: it "
                            "depends on which other inputs require grad "
                            "(ctx.needs_input_grad), and a model whose other inputs do not "
                            "(a data batch) gets this one")
    return result
