"""Richardson's evaluations of several inputs of one check in the same calls.

Each input's extrapolation (``richardson.columns_work``) is a generator of its
evaluations: it yields the points it needs next (``quotients.stacked_differences``'
requests) and goes on with their outputs. ``together`` runs the generators of
the inputs of one check side by side and evaluates the requests pending at
each round in one vmapped call (``Evaluator.outputs_together``), where the
function differentiates inside (a first derivative: every input is batched in
each input's own call anyway, ``gradcheck.core.points``). An evaluation call
costs as much as a hundred or more of its points, so a binary op's second input
then costs no call of its own. Each point is the same point as in its input's
own call, evaluated the same way; the decisions of each input's extrapolation
see only its own quotients, so the levels each takes are those it takes alone.

Where that call is not made (another function, an engine without it, a round
over the batch size, a call that raises), the generators finish one input
after another, in order, each request evaluated on its own as it comes: from
that round on the calls are those of the inputs alone (an input that fails
under vmap is then found as it is alone, and the loop reproduces its failure).
"""
from __future__ import annotations

from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.numerical import by_step, perturbed_points
from adcheck.gradcheck.numerics.quotients import evaluate


def together(ev: Evaluator, works: dict) -> dict:
    """What each generator of ``works`` (by input index; each yields only
    requests of that input) returns, by the same keys: the requests of every
    unfinished one evaluated in one call per round while that call can be made,
    then each finished alone, in the order of ``works``."""
    pending, done = {}, {}
    for key, work in works.items():
        _advance(work, key, None, pending, done)
    while len(pending) > 1:
        found = _combined(ev, pending)
        if found is None:
            break
        for key in list(pending):
            _advance(works[key], key, found[key], pending, done)
    for key, work in works.items():
        while key in pending:
            _advance(work, key, evaluate(ev, pending[key]), pending, done)
    return done


def _advance(work, key, outputs, pending: dict, done: dict) -> None:
    """Send ``outputs`` to ``work`` (``None``: start it); its next request goes to
    ``pending``, or what it returns to ``done``."""
    try:
        pending[key] = work.send(outputs)
    except StopIteration as finished:
        pending.pop(key, None)
        done[key] = finished.value


def _combined(ev: Evaluator, pending: dict) -> dict | None:
    """By input, what ``quotients.evaluate`` gives for each pending request, from
    one call for them all; ``None`` where that call is not made."""
    p, points, shapes = ev.problem, {}, {}
    for key, (in_idx, signed, columns, directions, extra) in pending.items():
        points[in_idx], shapes[in_idx] = perturbed_points(p, in_idx, signed, columns,
                                                          directions, extra)
    if len(points) < len(pending):   # (two requests of one input: never two calls in one)
        return None
    outs = ev.outputs_together(points)
    if outs is None:
        return None
    return {key: by_step(p, outs[request[0]], shapes[request[0]], request[4] is not None)
            for key, request in pending.items()}
