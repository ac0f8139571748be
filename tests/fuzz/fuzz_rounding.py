"""Rounding magnified by an ill-conditioned computation, told apart from a real
difference by torch itself.

Two engines that round differently in the last bit agree to 1e-9 through a
well-conditioned program; through an ill-conditioned one (``sin(exp(77.3))``,
where one ulp of the exponent is 5e17 in the argument of sin, or a double
backward whose terms of 1e9 cancel to 47) they need not. Whether a program
is that ill-conditioned is a property of the program at its data, and torch
can measure it: run the program again on torch alone with its leaves moved
by a few ulps. When, at every element where the engines differ, torch's own
result moves at least as far as refengine is from it, the difference is
rounding (docs/differences.md, "Rounding magnified by an ill-conditioned
program"). A formula off by a single-precision constant (3e-8 relative) in a
well-conditioned program stays a finding: there torch moves by ulps.

The leaves are moved by scaling each literal that is not a dyadic number
(``-0.956``, not ``0.5`` nor ``0``) by ``1 + k 2**-52``, the same factor for
every literal of one run: a zero, a special value at a kink (``1``, ``-1``,
``0.5``, ``2``) and a tie between two equal literals stay what they are, so
that a difference at a kink or a tie is never put down to a move across it.
Every observation of the program is compared, not only the first that
differs: each one that differs must be a value, a tangent, a gradient or a
hook's gradient within torch's moves.
"""
from __future__ import annotations

import re
from dataclasses import replace

import numpy as np

from fuzz_compare import arrays_of, elements_that_differ, same
from fuzz_engine import Difference, observe

# the moves, in units of 2**-52 relative: a few ulps either way
MOVES = (1, -1, 2, -2, 3, -3)
_LITERAL = re.compile(r"\b\d+\.\d+(?:e[-+]?\d+)?\b")
_ARRAYS = ("value", "tangent", "grad")

WHY = ("docs/differences.md: rounding magnified by an ill-conditioned program (a last-bit "
       "difference through exp and sin, a double backward whose large terms cancel): known "
       "only where torch's own result moves at least as far when the program's leaves move "
       "by a few ulps")


def _moved(literal: str, k: int) -> str:
    x = float(literal)
    if x * 1024 == round(x * 1024):     # dyadic: 0, +-1, 0.5, 2, ... stay (kinks, ties)
        return literal
    return repr(x * (1 + k * 2.0 ** -52))


def moved_leaves(program, k: int):
    """``program`` with every non-dyadic literal of its leaves scaled by ``1 + k 2**-52``."""
    stmts = tuple(replace(st, code=_LITERAL.sub(lambda m: _moved(m.group(0), k), st.code))
                  if st.kind == "leaf" else st for st in program.stmts)
    return replace(program, stmts=stmts)


def _pairs(a, b):
    """The (kind, refengine's array, torch's array) of each observation that differs
    between ``a`` and ``b`` (one step of the two records), or None when they differ
    in something that is not an array of numbers (flags, an error, a shape)."""
    if a[0] != b[0]:
        return None
    if a[0] == "hook":
        kinds = ("hooks",)
    elif a[0] in ("tensor", "seq"):
        kinds = _ARRAYS
    else:
        return [] if same(a, b) else None
    found = []
    for kind in kinds:
        d = Difference(kind, "", "", "", "", raw=(a, b))
        ref, tor = arrays_of(d)
        if ref is None:
            # not an array on both sides (None, a raised read): equal, or not this rule's
            if not same(_field(a, kind), _field(b, kind)):
                return None
        elif not same(ref, tor):
            found.append((kind, ref, tor))
    if a[0] == "tensor" and any(not same(a[1][f], b[1].get(f)) for f in ("flags", "version")):
        return None
    if a[0] == "seq" and (len(a[1]) != len(b[1]) or any(
            _pairs(x, y) is None for x, y in zip(a[1], b[1]))):
        return None
    return found


def _field(obs, kind):
    if obs[0] == "hook":
        return obs[1]
    if obs[0] == "tensor":
        return obs[1].get(kind)
    return tuple(_field(x, kind) for x in obs[1]) if obs[0] == "seq" else obs


def torch_moves_as_much(found, program, engines) -> bool:
    """Every observation where the two engines differ is an array of finite numbers
    at the elements that differ, and there torch's own result, with the leaves
    moved by a few ulps (``MOVES``), moves at least as far as refengine is from it."""
    if found.kind not in ("value", "grad", "tangent", "hooks") or program is None \
            or engines is None:
        return False
    ref_engine, torch = engines
    ref_obs, tor_obs = observe(program, ref_engine), observe(program, torch)
    if len(ref_obs) != len(tor_obs):
        return False
    differing = []
    for i, ((la, _, a), (lb, _, b)) in enumerate(zip(ref_obs, tor_obs)):
        pairs = _pairs(a, b) if la == lb else None
        if pairs is None:
            return False
        differing += [(i, kind, r, t) for kind, r, t in pairs]
    if not differing:
        return False
    moves = [observe(moved_leaves(program, k), torch) for k in MOVES]
    for i, kind, ref, tor in differing:
        off = elements_that_differ(ref, tor)
        with np.errstate(all="ignore"):
            if not (np.isfinite(ref[off]).all() and np.isfinite(tor[off]).all()):
                return False
            gap = np.abs(ref[off] - tor[off])
            reach = np.zeros_like(gap)
            for run in moves:
                if len(run) != len(tor_obs) or run[i][0] != tor_obs[i][0]:
                    continue        # the move changed what the program does: no measure
                moved, _ = arrays_of(Difference(kind, "", "", "", "",
                                                raw=(run[i][2], tor_obs[i][2])))
                if moved is None or moved.shape != tor.shape:
                    continue
                step = np.abs(moved[off] - tor[off])
                reach = np.maximum(reach, np.where(np.isfinite(step), step, 0))
        if not (gap <= reach).all():
            return False
    return True
