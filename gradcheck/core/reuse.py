"""One expected Jacobian for the checks of the same function at the same point.

A sweep runs several checks on one sample, each a ``check`` call of its own:
the reverse and the forward check of a function compare their AD sides with
the same numerical Jacobian, and so do the two second-order checks when they
draw the same grad_outputs. Building it (Richardson extrapolation; for a
low-precision formula, on its float64 run with the rounding allowance) is
most of a check's time, so the last few are kept and handed to a later check
of the same function, at the same inputs, with the same options that shape
it. Only dense Jacobians built without random draws are kept: compressed
and probed ones depend on the check's seed. What a probed low-precision
check measures without its directions (``kept``: the nearby points of the
formula and its float64 run, the float64 run's allowance of each entry) is
kept too, for the other second-order check of the same sample.

Only inside ``shared()``, which a caller enters when it knows the function
is the same computation from check to check (a sweep's sample call): a
user's function may read state that changes between two ``check`` calls
(a closure, a module's weights), and a Jacobian kept from before the change
would judge the new formula against the old function, a false pass.
"""
from __future__ import annotations

from contextlib import contextmanager
from functools import partial

import numpy as np

from adcheck.gradcheck.core import reuse_gg
from adcheck.gradcheck.core.reuse_ad import KeptProducer

#: how many expected Jacobians are kept (the checks of one sample come in a row)
KEPT = 2

_kept: list = []
#: how many measurements ``kept`` holds (a probed low-precision check makes two)
KEPT_PARTS = 4
_parts: list = []
#: the reverse Jacobians of dense first-order checks (``ad_kept``), for gradgrad
KEPT_AD = 2
_built: list = []
_depth = 0


@contextmanager
def shared():
    """Within it, checks of the same function at the same inputs and options
    share their expected Jacobian; what was kept is forgotten on leaving."""
    global _depth
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0:
            _kept.clear()
            _parts.clear()
            _built.clear()


def _options_key(options, plan) -> tuple:
    return (plan.kind, options.precise, options.low_precision, options.eps,
            options.memory_budget, options.reference, options.same_as)


def _same_point(arrays: dict, other: dict) -> bool:
    return arrays.keys() == other.keys() and all(
        a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)
        for a, b in ((arrays[k], other[k]) for k in arrays))


def expected_jacobian(ev, options, plan, produce):
    """``produce(ev)``, or (inside ``shared()``) the Jacobian it gave a previous check of the same
    function (``ev.origin``: the function as the user gave it, and the order)
    at the same inputs with the same options."""
    if plan.kind != "dense":
        return produce(ev)
    return _remembered(_kept, KEPT, ev, _options_key(options, plan), lambda: produce(ev))[0]


def grad_output_taken(ev, key: tuple) -> dict | None:
    """For a second-order check: the blocks of its first derivative in the
    grad_outputs, taken from the reverse Jacobian the sample's first-order check
    built at the same ``x`` under ``key`` (``ad_kept``; ``gradcheck.core.reuse_gg``
    says when they may stand for differences), or ``None``."""
    if ev.origin is None or ev.origin[1] != 2:
        return None
    n = getattr(ev.problem.func, "primals", None)
    if n is None:
        return None
    x = {i: a for i, a in ev.problem.arrays.items() if i < n}
    entry = _find(_built, (ev.origin[0], 1), x, key)
    return None if entry is None else reuse_gg.grad_output_blocks(ev, entry[4])


def ad_kept(ev, options, plan, side, produce):
    """``produce`` (a producer of ``side``'s Jacobian), or (inside ``shared()``,
    for the reverse side of a dense first-order check) the same producer keeping
    what it built for the sample's gradgrad check (``gradcheck.core.reuse_ad``)."""
    if plan.kind != "dense" or ev.origin is None or ev.origin[1] != 1 or not _depth \
            or side.mode != "reverse":
        return produce
    return KeptProducer(ev, (side.mode, options.memory_budget), produce,
                        partial(_keep, _built, KEPT_AD))


def _find(store: list, origin: tuple, arrays: dict, key):
    """The entry of ``store`` for the function ``origin`` (function, order) at
    ``arrays`` under ``key``, or ``None``."""
    for entry in store:
        func, order, their_key, their_arrays = entry[:4]
        if func == origin[0] and order == origin[1] and their_key == key \
                and _same_point(arrays, their_arrays):
            return entry
    return None


def _keep(store: list, limit: int, ev, key, value) -> list:
    """Keep ``value`` for ``ev``'s function at its inputs under ``key`` (the newest first)."""
    entry = [ev.origin[0], ev.origin[1], key,
             {k: a.copy() for k, a in ev.problem.arrays.items()}, value]
    store.insert(0, entry)
    del store[limit:]
    return entry


def _remembered(store: list, limit: int, ev, key, produce) -> tuple:
    """``(value, reused)``: the value ``store`` holds for ``ev``'s function
    (``ev.origin``) at its inputs under ``key``, or ``produce()``'s, then kept
    there (the newest first, at most ``limit``); outside ``shared()`` or for a
    function of unknown origin, ``produce()``'s, kept nowhere."""
    if ev.origin is None or not _depth:
        return produce(), False
    entry = _find(store, ev.origin, ev.problem.arrays, key)
    if entry is not None:
        return entry[4], True
    value = produce()
    _keep(store, limit, ev, key, value)
    return value, False


def kept(ev, what: tuple, produce) -> tuple:
    """``(produce(), False)``, or (inside ``shared()``) ``(value, True)`` for
    the value it gave a previous check of the same function (``ev.origin``) at
    the same inputs, for the same ``what`` (a tuple compared with ``==``: the
    measurement's name and what it depends on besides the function and the
    point). For measurements that draw no random numbers of the check's own:
    the nearby points of a low-precision formula and its float64 run's
    allowance (``gradcheck.large.lowprobed``), which gradgrad and fwgrad_bwgrad
    of one sample both make, with different directions."""
    return _remembered(_parts, KEPT_PARTS, ev, what, produce)
