"""Batched against looped: what every op's batching rule must reproduce.

For one OpInfo sample, a batch of ``SIZE`` nearby inputs (each input scaled
by ``1 + k * 1e-3``, which keeps it inside the op's domain) is run three
ways, each compared with the same computation done one example at a time:

- the function itself under ``vmap`` (all inputs batched, and, for several
  inputs, only the first one batched);
- ``autograd.grad`` with a batch of random grad_outputs
  (``is_grads_batched=True``), the backward formulas under vmap;
- forward mode with a batch of random tangents under ``vmap``.

The loop is the independent side: it never touches a batching rule. The ops
that fell back to the loop are recorded, so a test can ask that none did.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import adcheck.refengine as E
from adcheck.runner.samplecall import SampleCall
from adcheck.refengine.autograd import forward_ad
from adcheck.refengine.batching import record_fallbacks

SIZE = 3


@dataclass
class Outcome:
    """What one sample showed: mismatches (text) and the ops that looped."""

    mismatches: list = field(default_factory=list)
    fallbacks: dict = field(default_factory=dict)
    compared: int = 0


def _flat(value) -> list:
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _flat(v)]
    return [value]


def _arrays(value) -> list:
    return [t.detach().numpy().copy() for t in _flat(value) if isinstance(t, E.Tensor)]


def _stack(rows: list) -> list:
    return [np.stack(parts) for parts in zip(*rows)]


def _compare(outcome: Outcome, what: str, batched: list, looped: list) -> None:
    outcome.compared += 1
    if len(batched) != len(looped):
        outcome.mismatches.append(f"{what}: {len(batched)} outputs batched, {len(looped)} looped")
        return
    for i, (b, l) in enumerate(zip(batched, looped)):
        if b.shape != l.shape:
            outcome.mismatches.append(f"{what}: output {i} has shape {b.shape} batched, "
                                      f"{l.shape} looped")
        elif not np.allclose(b, l, rtol=1e-10, atol=1e-12, equal_nan=True):
            where = tuple(int(k) for k in np.argwhere(~np.isclose(b, l, rtol=1e-10, atol=1e-12,
                                                                 equal_nan=True))[0])
            outcome.mismatches.append(f"{what}: output {i} differs at {list(where)}: "
                                      f"{b[where]} batched, {l[where]} looped")


def _nearby(x, k: int):
    return (x.detach() * (1 + k * 1e-3)).requires_grad_(x.requires_grad)


def _random_like(rng, shape, dtype):
    a = rng.standard_normal((SIZE, *shape))
    if dtype.is_complex:
        a = a + 1j * rng.standard_normal((SIZE, *shape))
    return E.from_numpy(a.astype(dtype.name if dtype.name != "bool" else bool))


def check_sample(info, sample, seed: int = 0) -> Outcome:
    """Run the three comparisons for one sample; returns what they showed."""
    outcome = Outcome()
    call = SampleCall(info, sample)
    if not call.inputs:
        return outcome
    rng = np.random.default_rng(seed)
    with record_fallbacks() as seen:
        _check_function(outcome, call)
        if info.supports_autograd:
            _check_backward(outcome, call, rng)
        if info.supports_forward_ad:
            _check_forward(outcome, call, rng)
    outcome.fallbacks = dict(seen)
    return outcome


def _check_function(outcome: Outcome, call) -> None:
    examples = [[_nearby(x, k) for x in call.inputs] for k in range(SIZE)]
    with E.no_grad():
        looped = _stack([_arrays(call.func(*xs)) for xs in examples])
        stacked = [E.stack([xs[i] for xs in examples]) for i in range(len(call.inputs))]
        _compare(outcome, "vmap(f)", _arrays(E.vmap(call.func)(*stacked)), looped)
        if len(call.inputs) > 1:
            rest = call.inputs[1:]
            looped = _stack([_arrays(call.func(xs[0], *rest)) for xs in examples])
            dims = (0,) + (None,) * len(rest)
            got = E.vmap(call.func, in_dims=dims)(stacked[0], *rest)
            _compare(outcome, "vmap(f) with only input 0 batched", _arrays(got), looped)


def _check_backward(outcome: Outcome, call, rng) -> None:
    outs = [o for o in _flat(call.func(*call.inputs))
            if isinstance(o, E.Tensor) and o.requires_grad]
    if not outs:
        return
    grads = [_random_like(rng, tuple(o.shape), o.dtype) for o in outs]
    batched = E.autograd.grad(outs, call.inputs, grads, retain_graph=True, allow_unused=True,
                              is_grads_batched=True, materialize_grads=True)
    looped = []
    for k in range(SIZE):
        row = E.autograd.grad(outs, call.inputs, [g[k] for g in grads], retain_graph=True,
                              allow_unused=True, materialize_grads=True)
        looped.append(_arrays(row))
    _compare(outcome, "grad(is_grads_batched=True)", _arrays(batched), _stack(looped))


def _jvp(func, primals, tangents):
    with forward_ad.dual_level():
        duals = [forward_ad.make_dual(p.detach(), t) for p, t in zip(primals, tangents)]
        outs = [o for o in _flat(func(*duals)) if isinstance(o, E.Tensor)]
        result = []
        for o in outs:
            tangent = forward_ad.unpack_dual(o).tangent
            if o.is_floating_point() or o.is_complex():
                result.append(tangent if tangent is not None else E.zeros_like(o))
        return tuple(result)


def _check_forward(outcome: Outcome, call, rng) -> None:
    tangents = [_random_like(rng, tuple(x.shape), x.dtype) for x in call.inputs]
    batched = E.vmap(lambda *ts: _jvp(call.func, call.inputs, ts))(*tangents)
    looped = [_arrays(_jvp(call.func, call.inputs, [t[k] for t in tangents]))
              for k in range(SIZE)]
    _compare(outcome, "vmap(jvp)", _arrays(batched), _stack(looped))
