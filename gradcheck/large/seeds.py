"""Column seeds: the matrix ``S`` a compressed or probed Jacobian is ``J S`` of.

A Jacobian block ``J`` (output real coordinates by input real coordinates)
may be held as ``J S`` for a seed matrix ``S`` with one column per *cell
column*: every producer of that Jacobian pushes the same ``S`` through its
own computation (finite differences along each column of ``S``, one jvp per
column, or vjp rows multiplied by ``S``), and the one comparator compares
the cells. Three kinds:

- ``Identity``: ``S = I``, the plain Jacobian (used for the dense window and
  for chunked dense blocks);
- ``Groups``: one column per group of input coordinates that share no row of
  the block's pattern (``gradcheck.large.structure``), with a random weight on each
  coordinate: in each row a cell holds at most one pattern entry times its
  weight, so cells are entries;
- ``Probes``: ``k`` dense Gaussian columns; a cell is a random combination of
  a whole row.

``locate(out_idx, rows, g)`` names the entry a cell holds (``-1`` where a
cell holds none or several), which reports use to say where an error is.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


class Seeds:
    """The interface (see the module docstring); ``size`` input coordinates,
    ``count`` cell columns."""

    kind = "identity"
    size: int
    count: int

    def directions(self, start: int, stop: int) -> np.ndarray | None:
        """Columns ``start:stop`` of ``S`` as rows (real input coordinates), or
        ``None`` for unit columns ``start:stop`` (``Identity``)."""
        raise NotImplementedError

    def compress(self, rows: np.ndarray, start: int = 0, stop: int | None = None) -> np.ndarray:
        """``rows @ S[:, start:stop]`` for rows of a block (``(r, size)``)."""
        raise NotImplementedError

    def locate(self, out_idx: int, rows: np.ndarray, g: int) -> np.ndarray:
        """The input coordinate of the one pattern entry of each row in cell
        column ``g``, or -1."""
        return np.full(len(rows), -1, dtype=np.int64)

    def weight(self, columns: np.ndarray, g: int) -> np.ndarray:
        """``S[columns, g]``."""
        raise NotImplementedError

    def column_norms(self) -> np.ndarray:
        """``sum |S[:, g]|`` of each cell column ``g``: a cell is at most its
        block's largest entry times this."""
        raise NotImplementedError


@dataclass
class Identity(Seeds):
    """``S = I``: cells are the entries."""

    size: int
    kind = "identity"

    @property
    def count(self) -> int:
        return self.size

    def directions(self, start, stop):
        return None

    def compress(self, rows, start=0, stop=None):
        return rows[:, start:stop]

    def locate(self, out_idx, rows, g):
        return np.full(len(rows), g, dtype=np.int64)

    def weight(self, columns, g):
        return (np.asarray(columns) == g).astype(float)

    def column_norms(self):
        return np.ones(self.size)


@dataclass
class Groups(Seeds):
    """Coordinates in ``count`` groups, each with a weight (see the module
    docstring). ``patterns[out_idx]`` and ``colours[out_idx]`` (each
    coordinate's colour in that pattern) let ``locate`` find a cell's entry."""

    groups: np.ndarray
    weights: np.ndarray
    count: int
    patterns: dict = field(default_factory=dict)
    colours: dict = field(default_factory=dict)
    kind = "groups"

    def __post_init__(self):
        self.size = len(self.groups)
        self._order = np.argsort(self.groups, kind="stable")
        sorted_groups = self.groups[self._order]
        self._starts = np.searchsorted(sorted_groups, np.arange(self.count + 1))

    def members(self, g: int) -> np.ndarray:
        """The coordinates of group ``g``, in increasing order."""
        return self._order[self._starts[g]:self._starts[g + 1]]

    def directions(self, start, stop):
        out = np.zeros((stop - start, self.size))
        for g in range(start, stop):
            cols = self.members(g)
            out[g - start, cols] = self.weights[cols]
        return out

    def compress(self, rows, start=0, stop=None):
        stop = self.count if stop is None else stop
        lo, hi = self._starts[start], self._starts[stop]
        cols = self._order[lo:hi]
        weighted = rows[:, cols] * self.weights[cols]
        if weighted.shape[1] == 0:
            return np.zeros((rows.shape[0], stop - start))
        starts = self._starts[start:stop] - lo
        sums = np.add.reduceat(weighted, np.minimum(starts, weighted.shape[1] - 1), axis=1)
        sums[:, starts >= np.append(starts[1:], weighted.shape[1])] = 0.0  # empty groups
        return sums

    def locate(self, out_idx, rows, g):
        pattern, colours = self.patterns.get(out_idx), self.colours.get(out_idx)
        members = self.members(g)
        if pattern is None or members.size == 0:
            return np.full(len(rows), -1, dtype=np.int64)
        cols = pattern.columns_of(rows, int(colours[members[0]]))
        ok = cols >= 0
        ok[ok] = self.groups[cols[ok]] == g
        return np.where(ok, cols, -1)

    def weight(self, columns, g):
        columns = np.asarray(columns)
        return np.where(self.groups[columns] == g, self.weights[columns], 0.0)

    def column_norms(self):
        return np.bincount(self.groups, np.abs(self.weights), minlength=self.count)

    def cell_rows(self, out_idx: int, rows: np.ndarray, start: int, stop: int) -> np.ndarray:
        """``locate`` for ``rows`` and cell columns ``start:stop`` at once:
        ``(len(rows), stop - start)``, made afresh (a chunked check holds no
        whole table)."""
        table = np.empty((stop - start, len(rows)), dtype=np.int64)
        for g in range(start, stop):
            table[g - start] = self.locate(out_idx, rows, g)
        return table.T

    def cell_table(self, out_idx: int, rows: int) -> np.ndarray:
        """``locate`` for every row and cell column at once: ``(rows, count)``
        input coordinates, -1 where a cell holds no entry (kept once made)."""
        tables = self.__dict__.setdefault("_tables", {})
        if out_idx not in tables:
            everything = np.arange(rows)
            dtype = np.int32 if self.size < 2**31 else np.int64
            table = np.empty((self.count, rows), dtype=dtype)
            for g in range(self.count):
                table[g] = self.locate(out_idx, everything, g)
            tables[out_idx] = table.T
        return tables[out_idx]


@dataclass
class Probes(Seeds):
    """``k`` Gaussian directions (rows of ``vectors``, ``(k, size)``)."""

    vectors: np.ndarray
    kind = "probes"

    def __post_init__(self):
        self.count, self.size = self.vectors.shape

    def directions(self, start, stop):
        return self.vectors[start:stop]

    def compress(self, rows, start=0, stop=None):
        return rows @ self.vectors[start:stop].T

    def weight(self, columns, g):
        return self.vectors[g, np.asarray(columns)]

    def column_norms(self):
        return np.abs(self.vectors).sum(axis=1)


def signed_weights(rng: np.random.Generator, n: int) -> np.ndarray:
    """Weights of random sign and a magnitude uniform in [1, 2): bounded away
    from 0 (a cell keeps its entry's relative accuracy) and continuous (two
    errors in one cell cancel only for weights of probability zero)."""
    return rng.choice([-1.0, 1.0], n) * (1.0 + rng.random(n))
