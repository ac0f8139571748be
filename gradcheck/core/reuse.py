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

And what the first checks of a sample establish is not judged again by the
later ones: the AD Jacobians the reverse and forward checks built are the
ones the reference check compares with its mpmath Jacobian (``ad_taken``),
and a later check skips the determinism of the forward, the reentrancy of
the backward, the scaling of each side, the undefined gradients and the
value at the point (``verdict.pointvalue``) an earlier one judged right
(``judged``): properties of the function and its formulas, not of what they
are compared with.

Only inside ``shared()``, which a caller enters when it knows the function
is the same computation from check to check (a sweep's sample call): a
user's function may read state that changes between two ``check`` calls
(a closure, a module's weights), and a Jacobian kept from before the change
would judge the new formula against the old function, a false pass.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import replace
from functools import partial

from adcheck.gradcheck.core import reuse_gg
from adcheck.gradcheck.core.problem import same_bits
from adcheck.gradcheck.core.reuse_ad import KeptProducer

#: how many expected Jacobians are kept (the checks of one sample come in a row)
KEPT = 2

_kept: list = []
#: how many measurements ``kept`` holds (a probed low-precision check makes two)
KEPT_PARTS = 4
_parts: list = []
#: the AD Jacobians of dense first-order checks (``ad_kept``): the reverse one for
#: gradgrad, both for the reference check (``ad_taken``); a sample's reverse and
#: forward sides, in one dtype and the next
KEPT_AD = 4
_built: list = []
#: what first-order checks judged and found right at a point (``judged``)
KEPT_JUDGED = 2
_judged: list = []
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
            _judged.clear()


def _options_key(options, plan) -> tuple:
    return (plan.kind, options.precise, options.low_precision, options.eps,
            options.memory_budget, options.reference, options.same_as)


def _same_point(arrays: dict, other: dict) -> bool:
    # (the same bits: -0.0 is another point than 0.0, a NaN's payload another NaN;
    # asked of every kept entry of the function at every lookup, so a microsecond)
    if arrays.keys() != other.keys():
        return False
    for k, a in arrays.items():
        b = other[k]
        if a.dtype != b.dtype or a.shape != b.shape or not same_bits(a, b):
            return False
    return True


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
    for a dense first-order check) the same producer keeping what it built for
    the sample's later checks (``gradcheck.core.reuse_ad``)."""
    if plan.kind != "dense" or ev.origin is None or ev.origin[1] != 1 or not _depth:
        return produce
    return KeptProducer(ev, (side.mode, options.memory_budget), produce,
                        partial(_keep, _built, KEPT_AD))


def ad_taken(ev, options, plan, side):
    """Inside ``shared()``, for a dense first-order check: ``side``'s Jacobian as
    an earlier check of the same function at the same inputs built it (the
    reference check takes the reverse and the forward checks'), counted as no
    evaluation of this check's; else ``None``."""
    if plan.kind != "dense" or ev.origin is None or ev.origin[1] != 1 or not _depth:
        return None
    entry = _find(_built, ev.origin, ev.problem.arrays, (side.mode, options.memory_budget))
    if entry is None:
        return None
    return replace(entry[4], counts={}, seconds=0.0)


def judged(ev, what: str, nondet_tol: float) -> bool:
    """Inside ``shared()``: whether an earlier first-order check of the same
    function at the same inputs, with the same ``nondet_tol``, judged ``what``
    (``"deterministic"``, ``"reentrant"``, ``"scaling-reverse"``,
    ``"scaling-forward"``, ``"undefined-grad"``, ``"vmap-rule"``,
    ``"point-value"``: properties of the function and its formulas, not of the
    Jacobian a check compares with) and found it right."""
    if ev.origin is None or ev.origin[1] != 1 or not _depth:
        return False
    entry = _find(_judged, ev.origin, ev.problem.arrays, ("judged", nondet_tol))
    return entry is not None and what in entry[4]


def first_order_judged(ev, what: set, nondet_tol: float) -> bool:
    """For a second-order check (inside ``shared()``): whether the sample's
    first-order checks judged every property of ``what`` right at the same
    ``x`` (``judged``). A first derivative's determinism follows from the
    forward's and the backward's reentrancy: it is the vjp of a new graph at
    fixed grad_outputs."""
    if ev.origin is None or ev.origin[1] != 2 or not _depth:
        return False
    n = getattr(ev.problem.func, "primals", None)
    if n is None:
        return False
    x = {i: a for i, a in ev.problem.arrays.items() if i < n}
    entry = _find(_judged, (ev.origin[0], 1), x, ("judged", nondet_tol))
    return entry is not None and what <= entry[4]


def mark_judged(ev, found: set, nondet_tol: float) -> None:
    """Record (inside ``shared()``) that a first-order check judged ``found`` right."""
    if ev.origin is None or ev.origin[1] != 1 or not _depth or not found:
        return
    key = ("judged", nondet_tol)
    entry = _find(_judged, ev.origin, ev.problem.arrays, key)
    if entry is None:
        _keep(_judged, KEPT_JUDGED, ev, key, set(found))
    else:
        entry[4] |= found


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
