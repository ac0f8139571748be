"""Patterns listed entry by entry: sparse Jacobians that no band describes.

A permutation (``sort`` of a long vector, ``msort``), a gather or a scatter
has one or a few nonzeros in each row at places no band predicts: the
banded proposal of ``gradcheck.large.structure`` spans the whole dimension, and
the check would difference every column. When every sampled row of the
formula is that sparse, ``read`` takes the nonzeros of every row (one vjp
per output coordinate, as a dense reverse Jacobian would, but kept as a
list) and ``Listed`` colours them greedily: columns that share a row get
different colours, so a permutation's columns all share one. Rows are
coloured the same way for reverse mode's row groups.

A listed pattern is read from the formula, like a banded one, and it is
only a hypothesis in the same sense: the comparison stays sound whatever
pattern it is given (``gradcheck.large.compressed``).
"""
from __future__ import annotations

from functools import cached_property

import numpy as np

from adcheck.gradcheck.core import budget as budgets

#: a sampled row with at most this many nonzeros makes every row worth reading
SPARSE_ROW = 16
#: nonzeros per row, on average over all rows, beyond which a listed pattern
#: is not kept (greedy colouring is quadratic in a row's entries)
MOST_PER_ROW = 64


def _greedy(first: np.ndarray, second: np.ndarray, n_first: int) -> np.ndarray:
    """A colour for each of ``n_first`` indices such that two indices that
    meet a common ``second`` index differ, for the entries
    ``(first[k], second[k])``; in increasing order of index, the smallest
    colour free."""
    colours = np.zeros(n_first, dtype=np.int64)
    if first.size == 0:
        return colours
    order = np.lexsort((second, first))
    first, second = first[order], second[order]
    starts = np.searchsorted(first, np.arange(n_first + 1))
    taken: dict = {}          # second index -> colours of the first indices meeting it
    for i in range(n_first):
        mine = second[starts[i]:starts[i + 1]]
        used = set()
        for s in mine:
            used.update(taken.get(int(s), ()))
        colour = 0
        while colour in used:
            colour += 1
        colours[i] = colour
        for s in mine:
            taken.setdefault(int(s), []).append(colour)
    return colours


class Listed:
    """The nonzeros ``(rows[k], cols[k])`` of one block (flat real coordinates),
    with the ``Pattern`` interface ``gradcheck.large.compressed`` and ``seeds`` use."""

    def __init__(self, out_shape: tuple, in_shape: tuple, rows, cols):
        self.out_shape, self.in_shape = tuple(out_shape), tuple(in_shape)
        self.rows = np.asarray(rows, dtype=np.int64)
        self.cols = np.asarray(cols, dtype=np.int64)
        self.m = int(np.prod(self.out_shape, dtype=np.int64))
        self.n = int(np.prod(self.in_shape, dtype=np.int64))

    @cached_property
    def _column_colours(self) -> np.ndarray:
        return _greedy(self.cols, self.rows, self.n)

    @cached_property
    def _row_colours(self) -> np.ndarray:
        return _greedy(self.rows, self.cols, self.m)

    @property
    def column_count(self) -> int:
        return int(self._column_colours.max(initial=-1)) + 1

    @property
    def row_count(self) -> int:
        return int(self._row_colours.max(initial=-1)) + 1

    def column_colours(self) -> np.ndarray:
        """The colour of every column (flat input coordinate)."""
        return self._column_colours

    def row_colours(self) -> np.ndarray:
        """The colour of every row (flat output coordinate)."""
        return self._row_colours

    @cached_property
    def _by_row_colour(self) -> tuple:
        """The entries sorted by ``row * colours + column colour``."""
        keys = self.rows * max(1, self.column_count) + self._column_colours[self.cols]
        order = np.argsort(keys, kind="stable")
        return keys[order], self.cols[order]

    @cached_property
    def _by_column_colour(self) -> tuple:
        keys = self.cols * max(1, self.row_count) + self._row_colours[self.rows]
        order = np.argsort(keys, kind="stable")
        return keys[order], self.rows[order]

    @staticmethod
    def _lookup(table: tuple, keys: np.ndarray) -> np.ndarray:
        sorted_keys, values = table
        if sorted_keys.size == 0:
            return np.full(len(keys), -1, dtype=np.int64)
        at = np.minimum(np.searchsorted(sorted_keys, keys), sorted_keys.size - 1)
        return np.where(sorted_keys[at] == keys, values[at], -1)

    def columns_of(self, rows: np.ndarray, colour: int) -> np.ndarray:
        """For each row, its pattern column of ``colour``, or -1."""
        rows = np.asarray(rows, dtype=np.int64)
        return self._lookup(self._by_row_colour, rows * max(1, self.column_count) + colour)

    def rows_of(self, columns: np.ndarray, colour: int) -> np.ndarray:
        """For each column, its pattern row of row ``colour``, or -1."""
        columns = np.asarray(columns, dtype=np.int64)
        return self._lookup(self._by_column_colour, columns * max(1, self.row_count) + colour)

    def contains(self, rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
        """Whether each entry ``(rows[k], columns[k])`` lies on the pattern."""
        listed = np.sort(self.rows * self.n + self.cols)
        keys = np.asarray(rows, dtype=np.int64) * self.n + np.asarray(columns, dtype=np.int64)
        if listed.size == 0:
            return np.zeros(len(keys), dtype=bool)
        at = np.minimum(np.searchsorted(listed, keys), listed.size - 1)
        return listed[at] == keys

    def describe(self) -> str:
        return f"listed: {self.rows.size} nonzeros read from every row"


def sparse_rows(counts: np.ndarray) -> bool:
    """Whether sampled rows with ``counts`` nonzeros make reading every row pay."""
    return counts.size > 0 and int(counts.max()) <= SPARSE_ROW


def read(ev, side, idx: int, shapes) -> dict:
    """``{(out_idx, in_idx): Listed}`` for carrier ``idx`` of ``side``: the
    exact nonzeros of every one of its rows (reverse) or columns (forward),
    a budget's chunk at a time; a block denser than ``MOST_PER_ROW`` on
    average is left out. ``shapes(key)`` gives a block's real shapes."""
    p = ev.problem
    size = side.carrier_size(p.layout, idx)
    keys = [side.key(idx, r) for r in side.receivers(p)]
    keys = [k for k in keys if k[0] in p.diff_out]
    found = {k: ([], []) for k in keys}
    widest = max([side.receiver_size(p.layout, r) for r in side.receivers(p)] + [size])
    for start, stop in budgets.chunks(size, budgets.chunk_columns(ev.budget, widest)):
        units = np.zeros((stop - start, size))
        units[np.arange(stop - start), np.arange(start, stop)] = 1.0
        results = side.products(ev, idx, side.vectors(p, idx, units),
                                f"reading the formula's nonzeros, {start} to {stop - 1}")
        for r in side.receivers(p):
            key = side.key(idx, r)
            if key not in found:
                continue
            k, hit = np.nonzero(side.real_rows(p, r, results[r], stop - start))
            found[key][0].append(k + start)
            found[key][1].append(hit)
            if sum(map(len, found[key][0])) > MOST_PER_ROW * size:
                found.pop(key)
        if not found:   # every block too dense to list: the banded proposals stand
            break
    listed = {}
    for key, (carried, hit) in found.items():
        carried = np.concatenate(carried) if carried else np.zeros(0, dtype=np.int64)
        hit = np.concatenate(hit) if hit else np.zeros(0, dtype=np.int64)
        rows, cols = (carried, hit) if side.carrier == "output" else (hit, carried)
        listed[key] = Listed(*shapes(key), rows, cols)
    return listed
