"""The checks beyond Jacobian agreement, each returning ``Result`` objects.

Reentrancy (the same vjp twice), scaling with grad_output (and of the jvp
with its tangent), undefined output gradients, batched gradients, gradient
dtypes, and outputs that were detached from their inputs.
"""
from __future__ import annotations

import numpy as np

from gradcheck import coords
from gradcheck.adjoint import ADJOINT_ULPS
from gradcheck.compare import Result, compare_jacobians, entry_errors, worst
from gradcheck.errors import GradcheckError
from gradcheck.forward import tangents_to_real
from gradcheck.problem import Problem
from gradcheck.reverse import grads_to_real

#: the real factor grad_outputs and tangents are scaled by in the scaling check
SCALE = -2.5


def reentrant(first, second, nondet_tol: float) -> list:
    """Two runs of the same AD computation must agree within ``nondet_tol``."""
    results = compare_jacobians("reentrant", first, second, nondet_tol, 0.0)
    for r in results:
        if not r.passed:
            r.diagnosis = (f"nondeterministic: the same {_verb(first.mode)} run twice differs by "
                           f"{r.max_error:.1e}; the formula uses randomness or state (if that "
                           f"is intended, set nondet_tol >= {r.max_error:.1e})")
    return results


def _verb(mode):
    return "jvp" if "forward" in mode else "vjp"


def _scaled_result(mode, out_idx, in_idx, base, scaled, epsilon, nondet_tol, floor) -> Result:
    expected = SCALE * base
    scale = np.abs(expected) + np.abs(scaled)
    tol = ADJOINT_ULPS * epsilon * (scale + scale.max(initial=0.0) + floor) + 1e-300
    tol = tol + (1 + abs(SCALE)) * nondet_tol
    err = entry_errors(expected, scaled)
    passed = bool(np.all(err <= tol))
    max_error, where = worst(err, tol)
    what = "grad_output" if mode == "reverse" else "tangent"
    result = Result("scaling", mode, mode, out_idx, in_idx, passed, max_error, where,
                    None if where is None else float(tol[where]), expected, scaled)
    if not passed:
        result.diagnosis = (f"not scaled by {what}: multiplying the {what} by {SCALE} does not "
                            f"multiply the {_verb(mode)} by {SCALE}; the formula ignores the "
                            f"{what}, takes its abs(), or adds a term that does not multiply it")
    return result


def scaling_probes(problem: Problem, rng, backward: bool, forward: bool) -> dict:
    """Draw the random vectors of the scaling check, by (mode, index).

    They are drawn before the Jacobians are built and handed to the problem,
    so the batched Jacobian builders compute their vjps and jvps too.
    """
    probes = {}
    if backward:
        for out_idx in problem.diff_out:
            base = problem.out_arrays[out_idx]
            v = coords.from_real(rng.standard_normal(problem.layout.out_size(out_idx)),
                                 base.shape, base.dtype)
            probes["reverse", out_idx] = v
            problem.also("vjp", out_idx, ("scaling", out_idx), [v, SCALE * v])
    if forward:
        for in_idx in problem.diff_in:
            base = problem.arrays[in_idx]
            u = coords.from_real(rng.standard_normal(problem.layout.in_size(in_idx)),
                                 base.shape, base.dtype)
            probes["forward", in_idx] = u
            problem.also("jvp", in_idx, ("scaling", "forward", in_idx), [u, SCALE * u])
    return probes


def scaling(problem: Problem, probes: dict, epsilon: float, nondet_tol: float = 0.0,
            magnitudes=None) -> list:
    """The vjp is linear in grad_output, the jvp in the tangent (real scale).

    ``probes`` come from ``scaling_probes``. The tolerance is rounding
    (``ADJOINT_ULPS`` units of the results and of ``|v| * ||J||_F``, with
    ``magnitudes`` the blocks' Frobenius norms, for results that cancel to
    almost zero) plus the nondeterminism the caller allows (``nondet_tol``
    per evaluation).
    """
    magnitudes = magnitudes or {}
    results = []
    for (mode, idx), vector in probes.items():
        norm = (1 + abs(SCALE)) * np.linalg.norm(coords.to_real(vector))
        if mode == "reverse":
            g1, g2 = _vjp_pair(problem, idx, vector)
            results += [_scaled_result("reverse", idx, i, g1[i], g2[i], epsilon, nondet_tol,
                                       norm * magnitudes.get((idx, i), 0.0)) for i in g1]
        else:
            t1, t2 = _jvp_pair(problem, idx, vector)
            results += [_scaled_result("forward", o, idx, t1[o], t2[o], epsilon, nondet_tol,
                                       norm * magnitudes.get((o, idx), 0.0))
                        for o in problem.diff_out]
    return results


def _vjp_pair(problem: Problem, out_idx: int, v) -> tuple:
    """The vjps of ``v`` and ``SCALE * v``, in one batched backward if possible."""
    what = "checking scaling"
    done = problem.extra_results.pop(("scaling", out_idx), None)
    if done is not None:
        return tuple(grads_to_real(problem, grads) for grads in done)
    batch = problem.vjp_batch(out_idx, np.stack([v, SCALE * v]), what)
    if batch is None:
        return tuple(grads_to_real(problem, problem.vjp({out_idx: w}, what)) for w in (v, SCALE * v))
    return tuple(grads_to_real(problem, {i: None if g is None else g[k] for i, g in batch.items()})
                 for k in (0, 1))


def _jvp_pair(problem: Problem, in_idx: int, u) -> tuple:
    """The jvps of ``u`` and ``SCALE * u``, in one batched forward pass if possible."""
    what = "checking scaling"
    done = problem.extra_results.pop(("scaling", "forward", in_idx), None)
    if done is not None:
        return tuple(tangents_to_real(problem, tangents) for tangents in done)
    batch = problem.jvp_batch(in_idx, np.stack([u, SCALE * u]), what)
    if batch is None:
        return tuple(tangents_to_real(problem, problem.jvp({in_idx: w}, what)) for w in (u, SCALE * u))
    return tuple(tangents_to_real(problem, {o: t[k] for o, t in batch.items()}) for k in (0, 1))


def request_undefined_grad(problem: Problem) -> None:
    """Where undefined gradients are zeros (refengine) and there is one output,
    the undefined-grad check is the vjp of zeros: the reverse batch computes it."""
    if not problem.engine.supports_undefined_grad and len(problem.diff_out) == 1:
        out_idx = problem.diff_out[0]
        problem.also("vjp", out_idx, ("undefined",), [np.zeros_like(problem.out_arrays[out_idx])])


def undefined_grad(problem: Problem) -> list:
    """With every output gradient undefined (or zero), input gradients are zero."""
    E = problem.engine
    done = problem.extra_results.pop(("undefined",), None)
    if done is not None:
        return _undefined_results(problem, [done[0].get(i) for i in problem.diff_in])
    outs = [problem.outputs[o] for o in problem.diff_out]
    undefined = [E.undefined_grad(o) for o in outs]
    if any(u is None for u in undefined):
        undefined = outs  # the engine has no undefined gradients: use zeros
    zeros = [E.from_numpy(np.zeros_like(problem.out_arrays[o])) for o in problem.diff_out]
    diff_inputs = [problem.inputs[i] for i in problem.diff_in]
    problem.counts["vjp"] += 1
    try:
        grads = E.grad(undefined, diff_inputs, zeros)
    except Exception as exc:
        return [Result("undefined-grad", "reverse", "zero", None, None, False,
                       diagnosis=f"the backward raised {type(exc).__name__} ({exc}) when its "
                       "output gradients were undefined; it must accept None/zero grads")]
    return _undefined_results(problem, [None if g is None else E.to_numpy(g) for g in grads])


def _undefined_results(problem: Problem, arrays: list) -> list:
    results = []
    for in_idx, array in zip(problem.diff_in, arrays):
        bad = array is not None and bool(np.any(array != 0))
        result = Result("undefined-grad", "reverse", "zero", None, in_idx, not bad)
        if bad:
            result.max_error, result.where = worst(np.abs(array).reshape(1, -1),
                                                   np.zeros((1, array.size)))
            result.diagnosis = ("with all output gradients undefined or zero the backward "
                                "returns a nonzero gradient: it adds a term that does not "
                                "multiply grad_output")
        results.append(result)
    return results


def grad_dtypes(problem: Problem) -> list:
    """Each vjp gradient has its input's dtype, each tangent its output's."""
    results = []
    for out_idx in problem.diff_out:
        base = problem.out_arrays[out_idx]
        go = np.ones_like(base)
        grads = problem.vjp({out_idx: go}, "checking gradient dtypes")
        for in_idx, g in grads.items():
            expected = problem.arrays[in_idx].dtype
            ok = g is None or g.dtype == expected
            results.append(Result("grad-dtype", "reverse", "input", out_idx, in_idx, ok,
                                  diagnosis=None if ok else
                                  f"the gradient has dtype {g.dtype} but input {in_idx} has "
                                  f"dtype {expected}"))
    return results


def batched_grad(problem: Problem, rng, atol: float, rtol: float, batch: int = 2) -> list:
    """``grad(..., is_grads_batched=True)`` equals one vjp per batch entry."""
    E = problem.engine
    results = []
    diff_inputs = [problem.inputs[i] for i in problem.diff_in]
    for out_idx in problem.diff_out:
        base = problem.out_arrays[out_idx]
        gos = [coords.from_real(rng.standard_normal(problem.layout.out_size(out_idx)),
                                base.shape, base.dtype) for _ in range(batch)]
        singles = [grads_to_real(problem, problem.vjp({out_idx: g})) for g in gos]
        problem.counts["vjp"] += 1
        try:
            batched = E.batched_grad([problem.outputs[out_idx]], diff_inputs,
                                     [E.from_numpy(np.stack(gos))])
        except Exception as exc:
            raise GradcheckError(
                f"{problem.name}: batched backward (is_grads_batched=True) raised "
                f"{type(exc).__name__} ({exc}); pass check_batched_grad=False if the "
                "function does not support it") from exc
        for in_idx, g in zip(problem.diff_in, batched):
            rows = np.zeros((batch, problem.layout.in_size(in_idx))) if g is None else \
                np.stack([grads_to_real(problem, {in_idx: b})[in_idx] for b in E.to_numpy(g)])
            expected = np.stack([s[in_idx] for s in singles])
            results.append(_batch_result("batched-grad", "reverse", out_idx, in_idx,
                                         expected, rows, atol, rtol))
    return results


def batched_forward_grad(problem: Problem, rng, atol: float, rtol: float, batch: int = 2) -> list:
    """Forward AD with a batch of tangents equals one jvp per tangent."""
    E = problem.engine
    results = []
    for in_idx in problem.diff_in:
        base = problem.arrays[in_idx]
        tangents = [coords.from_real(rng.standard_normal(problem.layout.in_size(in_idx)),
                                     base.shape, base.dtype) for _ in range(batch)]
        singles = [tangents_to_real(problem, problem.jvp({in_idx: t})) for t in tangents]
        primals = problem.fresh_inputs({})
        problem.counts["jvp"] += 1
        try:
            outs = E.batched_jvp(problem.func, primals, in_idx, E.from_numpy(np.stack(tangents)))
        except Exception as exc:
            raise GradcheckError(
                f"{problem.name}: batched forward AD (vmap over jvp) raised "
                f"{type(exc).__name__} ({exc}); pass check_batched_forward_grad=False if the "
                "function does not support vmap") from exc
        for o in problem.diff_out:
            rows = np.stack([coords.to_real(b) for b in E.to_numpy(outs[o])])
            expected = np.stack([s[o] for s in singles])
            results.append(_batch_result("batched-forward-grad", "forward", o, in_idx,
                                         expected, rows, atol, rtol))
    return results


def _batch_result(check, mode, out_idx, in_idx, expected, actual, atol, rtol) -> Result:
    tol = atol + rtol * np.abs(expected)
    err = entry_errors(expected, actual)
    passed = bool(np.all(err <= tol))
    max_error, where = worst(err, tol)
    result = Result(check, f"batched-{mode}", mode, out_idx, in_idx, passed, max_error, where,
                    None if where is None else float(tol[where]), expected, actual)
    if not passed:
        result.diagnosis = (f"the batched {_verb(mode)} differs from one {_verb(mode)} per "
                            "batch entry: the formula mixes batch entries or ignores the "
                            "batch dimension")
    return result


def detached(problem: Problem, numerical, atol: float) -> list:
    """Outputs that do not require grad must not depend on the inputs."""
    results = []
    for out_idx in problem.float_out:
        if out_idx in problem.diff_out:
            continue
        for in_idx in problem.diff_in:
            block = numerical[out_idx, in_idx]
            err = np.abs(block)
            passed = bool(np.all(err <= atol))
            max_error, where = worst(err, np.full(err.shape, atol))
            result = Result("detached", "numerical", "zero", out_idx, in_idx, passed,
                            max_error, where, atol, np.zeros_like(block), block)
            if not passed:
                result.diagnosis = (
                    f"output {out_idx} does not require grad, yet it depends on input "
                    f"{in_idx}: the function detaches it from the graph (.detach(), .numpy(), "
                    "no_grad, or a Function that marks it non-differentiable)")
            results.append(result)
    return results
