"""A vmap rule of the user's own against one call per example.

``torch.func.vmap`` runs a ``torch.autograd.Function`` that overrides the
``vmap`` staticmethod, and a ``torch.library`` custom op with a rule given to
``register_vmap``, through that rule, never through the forward (and
``refengine.vmap`` a refengine Function's, likewise). A rule that
reduces over the batch dimension, ignores ``in_dims`` (a batch at another
dimension, or an argument that is not batched at all) or returns the wrong
``out_dims`` gives wrong values under vmap, and every gradient check passes:
the batched gradient checks map the backward, not the rule, and the engine's
own batched evaluations fall back to one call at a time when the first
example differs (``Engine.first_example_agrees``), which would hide it too.

So where the function under check runs such a rule (``F.apply`` or the op,
or a function that names either as ``func.autograd_function``: a harvested
application), the rule is run on a batch of examples and compared with the
function called once per example: the examples are the given inputs and two
copies scaled entry by entry within ``1 +- SPREADS[k]`` (signs kept, so a
domain such as ``x > 0`` is kept), batched in every way a caller may batch
them: all at dimension 0, each argument alone, and all at their last
dimension. Where no scaled copy stays in the function's domain (a Function
that refuses rows not summing to one, say), the examples are the given
inputs three times: the rule's shapes, ``in_dims`` and ``out_dims`` are
still judged, a rule that mixes examples is not, and the report says so
(``Report.partial``).
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.problem import as_tuple
from adcheck.gradcheck.verdict.compare import Result

#: examples in the batch: the given inputs and scaled copies
EXAMPLES = 3
#: how far the copies are scaled, entry by entry: the wider first, the
#: narrower where the wider leaves the function's domain (NaN, an exception)
SPREADS = (0.25, 1e-3)


def vmap_rule_results(ev: Evaluator, nondet_tol: float) -> tuple:
    """``(results, partial)``: one result per float output for each layout of
    the batch up to the first that fails (none when the function runs no vmap
    rule of the user's); ``partial`` says what was not judged, or is ``None``."""
    p = ev.problem
    rule = p.engine.vmap_rule_of(p.source)
    if rule is None or p.order != 1:
        return [], None
    batched = [i for i in p.arrays if p.arrays[i].dtype.kind in "fc"]
    args, singles, partial = _examples(p, batched, rule)
    if args is None:
        return [], partial
    results = []
    for label, dims in _layouts(p, batched):
        results += _compare_layout(p, rule, label, dims, args, singles, nondet_tol)
        if not all(r.passed for r in results):
            break   # (the first layout it fails in: the others mostly repeat the cause)
    return results, partial


def _examples(p, batched: list, rule) -> tuple:
    """``(inputs by example and index, outputs called one at a time, partial)``
    at the widest spread whose outputs are finite where the given ones are;
    else the given inputs ``EXAMPLES`` times, ``partial`` saying so."""
    rng = np.random.default_rng(0)   # (its own draws: the check's rng stays as it was)
    draws = {i: rng.uniform(-1.0, 1.0, (EXAMPLES - 1, *p.arrays[i].shape)) for i in batched}
    given = {i: p.arrays[i] for i in batched}
    for spread in SPREADS:
        arrays = [given] + [
            {i: (p.arrays[i] * (1 + spread * draws[i][k])).astype(p.arrays[i].dtype)
             for i in batched} for k in range(EXAMPLES - 1)]
        try:
            singles = [_call(p, p.source, _tensors(p, a)) for a in arrays]
        except Exception:  # noqa: BLE001 - a copy outside the domain: a narrower spread
            continue
        if all(_finite_where_given(p, outs) for outs in singles[1:]):
            return arrays, singles, None
    outside = (f"no copy of the inputs scaled entry by entry by 1 +- {SPREADS[0]:g} or "
               f"1 +- {SPREADS[-1]:g} stays in the function's domain (an exception, or "
               "outputs that are not finite)")
    try:
        once = _call(p, p.source, _tensors(p, given))
    except Exception as exc:  # noqa: BLE001 - the gradient checks have reported it
        return None, None, (f"{rule} not checked: {outside}, and the given inputs raised "
                            f"{type(exc).__name__} outside autograd")
    return [given] * EXAMPLES, [once] * EXAMPLES, (
        f"{rule} checked on {EXAMPLES} identical examples, as {outside}: its shapes, in_dims "
        "and out_dims were judged, a rule that mixes examples was not")


def _finite_where_given(p, outs: tuple) -> bool:
    for o in p.float_out:
        given = np.isfinite(p.out_arrays[o])
        found = p.engine.to_numpy(outs[o])
        if found.shape != given.shape or not np.isfinite(found[given]).all():
            return False
    return True


def _tensors(p, arrays: dict) -> list:
    """The function's arguments with the tensors of ``arrays`` in place."""
    E, args = p.engine, list(p.inputs)
    for i, a in arrays.items():
        args[i] = E.from_numpy_like(a, p.inputs[i])
    return args


def _call(p, func, args) -> tuple:
    with p.engine.no_grad():
        return as_tuple(func(*args))


def _layouts(p, batched: list) -> list:
    """``(label, {index: batch dimension})`` for each way of batching the inputs."""
    layouts = [("every input batched at dimension 0", {i: 0 for i in batched})]
    if len(batched) > 1:
        layouts += [(f"only input {i} batched (at dimension 0)", {i: 0}) for i in batched]
    last = {i: p.arrays[i].ndim for i in batched}
    if any(last.values()):
        layouts.append(("every input batched at its last dimension", last))
    return layouts


def _compare_layout(p, rule, label, dims: dict, arrays: list, singles: list,
                    nondet_tol: float) -> list:
    """The rule on the examples batched as ``dims`` says, output by output; an
    input this layout leaves unbatched is the given one in every example."""
    E = p.engine
    if len(dims) < len(arrays[0]):
        arrays = [{**arrays[0], **{i: a[i] for i in dims}} for a in arrays]
        singles = [_call(p, p.source, _tensors(p, a)) for a in arrays]
    args = list(p.inputs)
    for i, d in dims.items():
        args[i] = E.from_numpy(np.stack([a[i] for a in arrays], axis=d), dtype=p.inputs[i].dtype)
    in_dims = tuple(dims.get(i) for i in range(len(p.inputs)))
    try:
        found = _call(p, E.unchecked_vmap(p.source, in_dims), args)
    except Exception as exc:  # noqa: BLE001 - the rule's own error is the finding
        if "randomness" in str(exc):   # a rule that draws: the determinism check's to judge
            return []
        return [_failed(rule, label, in_dims,
                        f"vmap raised {type(exc).__name__} ({str(exc)[:300]})")]
    results = []
    for o in p.float_out:
        expected = np.stack([E.to_numpy(outs[o]) for outs in singles])
        got = E.to_numpy(found[o]) if o < len(found) and E.is_tensor(found[o]) else None
        if got is None or got.shape != expected.shape:
            shape = "no tensor" if got is None else f"shape {tuple(got.shape)}"
            results.append(_failed(rule, label, in_dims,
                                   f"output {o} is {shape}, one call per example stacked "
                                   f"gives shape {tuple(expected.shape)}", o))
            continue
        results.append(_compared(p, o, rule, label, in_dims, expected, got, nondet_tol))
    return results


def _compared(p, o, rule, label, in_dims, expected, got, nondet_tol) -> Result:
    """Within rounding: a batched kernel may sum in another order, so a margin of
    the square root of the dtype's epsilon of the largest value (a rule's error
    moves values by the examples' spread, far above it)."""
    eps = float(np.finfo(expected.real.dtype).eps)
    eps = max(eps, p.epsilon(out_idx=o))
    finite = np.abs(expected[np.isfinite(expected)])
    scale = float(finite.max()) if finite.size else 0.0
    tolerance = nondet_tol + np.sqrt(eps) * scale
    both_nan = np.isnan(expected) & np.isnan(got)
    error = np.where(both_nan, 0.0, np.abs(got - expected))
    error = np.where(np.isnan(error), np.inf, error)
    worst = float(error.max()) if error.size else 0.0
    where = tuple(int(k) for k in np.unravel_index(int(error.argmax()), error.shape)) \
        if error.size else None
    passed = worst <= tolerance
    result = Result("vmap-rule", "vmap", "loop", o, None, passed, worst, where, tolerance,
                    expected, got)
    if not passed:
        example = where[0]
        result.diagnosis = _words(rule, label, in_dims, (
            f"at example {example}, entry {list(where[1:])}, vmap gives {got[where]:.6g} "
            f"where one call gives {expected[where]:.6g}"))
    return result


def _failed(rule, label, in_dims, what: str, o: int | None = None) -> Result:
    result = Result("vmap-rule", "vmap", "loop", o, None, False, float("inf"))
    result.diagnosis = _words(rule, label, in_dims, what)
    return result


def _words(rule, label, in_dims, what: str) -> str:
    return (f"{label} (in_dims={in_dims}): {what}; {rule} must move each batched "
            "argument's dimension in_dims[i] itself, leave an argument whose in_dims[i] is "
            "None unbatched, and return out_dims saying where each output's batch dimension is")
