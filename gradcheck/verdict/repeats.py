"""Reentrancy of a block made a batch at a time: one result per pair.

A dense check makes reverse mode's Jacobian twice and compares the two
(``checks.reentrant``). A check that makes a block a batch of rows (or a
chunk of cells) at a time and drops it (``gradcheck.large.streamed``) makes
each batch twice instead, and compares the two by the same rule,
``checks.reentrant``; ``Repeats`` keeps, per (output, input) pair, the one
result the block would have had: its worst batch (one that fails first),
with where the difference is in the whole block and the batch's arrays as
its window. Only the worst batch's arrays are held. Imports from the core
and the verdict's checks.
"""
from __future__ import annotations

from adcheck.gradcheck.core.jacobian import Jacobian
from adcheck.gradcheck.verdict import checks


class Repeats:
    """The reentrancy results of the blocks of one check, by pair."""

    def __init__(self, problem, nondet_tol: float):
        self.problem, self.nondet_tol = problem, nondet_tol
        #: (out_idx, in_idx) -> the worst ``Result`` so far
        self.worst: dict = {}

    def add(self, out_idx: int, in_idx: int, first, again, origin: tuple = (0, 0)) -> None:
        """Reverse mode's entries of block ``(out_idx, in_idx)`` made twice,
        ``first`` and ``again`` (real form, 2-D), whose first entry sits at
        ``origin`` (row, complex-form column) in the block."""
        layout = self.problem.layout
        one = Jacobian("reverse", layout, {(out_idx, in_idx): first})
        two = Jacobian("reverse", layout, {(out_idx, in_idx): again})
        for result in checks.reentrant(self.problem, one, two, self.nondet_tol):
            if result.where is not None:
                result.where = (result.where[0] + origin[0], result.where[1] + origin[1])
            result.origin = tuple(origin)
            held = self.worst.get((out_idx, in_idx))
            if held is None or _rank(result) > _rank(held):
                self.worst[out_idx, in_idx] = result

    def results(self, in_idx: int) -> list:
        """The one result of each pair of input ``in_idx``, handed over."""
        keys = sorted(key for key in self.worst if key[1] == in_idx)
        return [self.worst.pop(key) for key in keys]


def _rank(result) -> tuple:
    """A failure above a pass, then the larger difference."""
    return not result.passed, result.max_error
