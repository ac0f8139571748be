"""Sparsity patterns of Jacobian blocks: banded along paired dimensions, dense in the rest.

A block's rows are the output's real coordinates and its columns the
input's, each laid out in a *real shape* (the tensor's shape, with a trailing
dimension of 2 for a complex tensor's real and imaginary parts). A
``Pattern`` says which entries may be nonzero: for each ``Band`` (an output
dimension ``b`` paired with an input dimension ``a``) an entry at output
index ``o`` and input index ``i`` may be nonzero only when
``lo <= i[a] - stride * o[b] <= hi``; the other dimensions are free (any
index of one may meet any index of the other). This covers:

- elementwise ops: every dimension paired, ``lo = hi = 0``;
- row-wise ops (softmax, norms, cumsum along the last dimension): every
  dimension but the last paired with itself, the last free;
- block-diagonal batches (matmul's left operand: the row index is paired);
- banded ops (a convolution's spatial dimensions: ``lo..hi`` the kernel's
  reach, ``stride`` its stride), and broadcasts (an input dimension paired
  with the output dimension it broadcasts along, the others free).

Colourings. Two columns whose indices along a band's input dimension differ
by at least ``width = hi - lo + 1`` never share a row, so the colour
``i[a] mod width`` along a band, times the index along each free dimension,
gives groups of columns that share no row (``column_colours``); in row ``o``
each colour has at most one column of the pattern (``columns_of``). Rows are
coloured the same way for reverse mode (``row_colours``, ``rows_of``).

``detect`` proposes a pattern from the analytical side itself: the exact
nonzeros of a few rows (vjps of unit grad_outputs, or columns from jvps)
give, for each pair of an output and an input dimension, the range of
``i[a] - stride * o[b]``; pairs with a range narrower than the dimension are
bands. A proposal is only a hypothesis: ``gradcheck.large.compressed`` checks it
against random products before it relies on it, and its comparison is sound
whatever pattern it uses (see there).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np


def real_shape(shape, complex_: bool) -> tuple:
    """The shape of a tensor's real coordinates (``coords.to_real`` order)."""
    shape = tuple(int(n) for n in shape) or (1,)
    return shape + (2,) if complex_ else shape


@dataclass(frozen=True)
class Band:
    """``lo <= i[in_dim] - stride * o[out_dim] <= hi`` on the pattern."""

    out_dim: int
    in_dim: int
    stride: int
    lo: int
    hi: int

    @property
    def width(self) -> int:
        return self.hi - self.lo + 1


@dataclass(frozen=True)
class Pattern:
    """Which entries of one block may be nonzero (see the module docstring)."""

    out_shape: tuple
    in_shape: tuple
    bands: tuple = ()

    @cached_property
    def _by_in(self) -> dict:
        return {band.in_dim: band for band in self.bands}

    @cached_property
    def _by_out(self) -> dict:
        return {band.out_dim: band for band in self.bands}

    # ----- columns ------------------------------------------------------------
    @cached_property
    def column_sizes(self) -> tuple:
        """Colours along each input dimension."""
        return tuple(min(self._by_in[a].width, n) if a in self._by_in else n
                     for a, n in enumerate(self.in_shape))

    @property
    def column_count(self) -> int:
        return int(np.prod(self.column_sizes, dtype=np.int64))

    def column_colours(self) -> np.ndarray:
        """The colour of every column (flat input coordinate)."""
        return _colours(self.in_shape, self.column_sizes)

    def columns_of(self, rows: np.ndarray, colour: int) -> np.ndarray:
        """For each row (flat output coordinate), its pattern column of
        ``colour`` (flat input coordinate), or -1 where it has none."""
        o = np.unravel_index(np.asarray(rows, dtype=np.int64), self.out_shape)
        c = np.unravel_index(colour, self.column_sizes)
        index, valid = [], np.ones(len(rows), dtype=bool)
        for a, n in enumerate(self.in_shape):
            band = self._by_in.get(a)
            if band is None:
                index.append(np.full(len(rows), c[a], dtype=np.int64))
                continue
            start = band.stride * o[band.out_dim] + band.lo
            if self.column_sizes[a] < band.width:     # the band covers the whole dimension
                i = np.full(len(rows), c[a], dtype=np.int64)
                valid &= (i >= start) & (i <= start + band.width - 1)
            else:
                i = start + (c[a] - start) % band.width
            valid &= (i >= 0) & (i < n)
            index.append(np.clip(i, 0, n - 1))
        flat = np.ravel_multi_index(tuple(index), self.in_shape)
        return np.where(valid, flat, -1)

    # ----- rows ---------------------------------------------------------------
    def _row_width(self, band: Band) -> int:
        return (band.width - 1) // band.stride + 1

    @cached_property
    def row_sizes(self) -> tuple:
        """Colours along each output dimension."""
        return tuple(min(self._row_width(self._by_out[b]), n) if b in self._by_out else n
                     for b, n in enumerate(self.out_shape))

    @property
    def row_count(self) -> int:
        return int(np.prod(self.row_sizes, dtype=np.int64))

    def row_colours(self) -> np.ndarray:
        """The colour of every row (flat output coordinate)."""
        return _colours(self.out_shape, self.row_sizes)

    def rows_of(self, columns: np.ndarray, colour: int) -> np.ndarray:
        """For each column, its pattern row of row ``colour``, or -1."""
        i = np.unravel_index(np.asarray(columns, dtype=np.int64), self.in_shape)
        h = np.unravel_index(colour, self.row_sizes)
        index, valid = [], np.ones(len(columns), dtype=bool)
        for b, n in enumerate(self.out_shape):
            band = self._by_out.get(b)
            if band is None:
                index.append(np.full(len(columns), h[b], dtype=np.int64))
                continue
            s = band.stride
            first = -((band.hi - i[band.in_dim]) // s)       # ceil((i - hi) / s)
            last = (i[band.in_dim] - band.lo) // s
            width = self._row_width(band)
            if self.row_sizes[b] < width:
                o = np.full(len(columns), h[b], dtype=np.int64)
            else:
                o = first + (h[b] - first) % width
            valid &= (o >= first) & (o <= last) & (o >= 0) & (o < n)
            index.append(np.clip(o, 0, n - 1))
        flat = np.ravel_multi_index(tuple(index), self.out_shape)
        return np.where(valid, flat, -1)

    def contains(self, rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
        """Whether each entry ``(rows[k], columns[k])`` lies on the pattern."""
        o = np.unravel_index(np.asarray(rows, dtype=np.int64), self.out_shape)
        i = np.unravel_index(np.asarray(columns, dtype=np.int64), self.in_shape)
        inside = np.ones(len(rows), dtype=bool)
        for band in self.bands:
            d = i[band.in_dim] - band.stride * o[band.out_dim]
            inside &= (d >= band.lo) & (d <= band.hi)
        return inside

    def describe(self) -> str:
        """In words: ``elementwise``, ``dense``, or the bands."""
        if not self.bands:
            return "dense"
        if (len(self.bands) == len(self.in_shape) == len(self.out_shape)
                and all(b.lo == b.hi == 0 and b.stride == 1 and b.in_dim == b.out_dim
                        for b in self.bands)):
            return "elementwise"
        parts = []
        for b in self.bands:
            step = "" if b.stride == 1 else f"{b.stride}*"
            reach = f"= {step}o[{b.out_dim}]" if b.lo == b.hi == 0 else \
                f"in {step}o[{b.out_dim}] + [{b.lo}, {b.hi}]"
            parts.append(f"i[{b.in_dim}] {reach}")
        return "banded: " + ", ".join(parts)


def propose(out_shape: tuple, in_shape: tuple, rows, cols) -> Pattern:
    """The narrowest pattern holding every sampled nonzero ``(rows[k], cols[k])``
    (flat output and input coordinates: the exact nonzeros of some rows, or of
    some columns). Each (output dimension, input dimension, stride) whose
    offsets span less than the input dimension is a candidate band; the
    narrowest are taken first, each dimension in at most one band."""
    rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
    if rows.size == 0:
        return Pattern(out_shape, in_shape)
    o = np.unravel_index(rows, out_shape)
    i = np.unravel_index(cols, in_shape)
    candidates = []
    for b, m in enumerate(out_shape):
        for a, n in enumerate(in_shape):
            for stride in sorted({1, max(1, round(n / m))}):
                d = i[a] - stride * o[b]
                band = Band(b, a, stride, int(d.min()), int(d.max()))
                if band.width < n or n == m == 1:
                    candidates.append((band.width / n, band.out_dim != band.in_dim, band))
    chosen, used_in, used_out = [], set(), set()
    for _, _, band in sorted(candidates, key=lambda c: c[:2]):
        if band.in_dim not in used_in and band.out_dim not in used_out:
            chosen.append(band)
            used_in.add(band.in_dim)
            used_out.add(band.out_dim)
    return Pattern(out_shape, in_shape, tuple(sorted(chosen, key=lambda b: b.in_dim)))


def combined(colourings: list) -> tuple:
    """Groups that refine several colourings of the same coordinates: two
    coordinates share a group only if they share a colour in each. Returns
    ``(group of each coordinate, number of groups)``."""
    if len(colourings) == 1:
        return colourings[0], int(colourings[0].max(initial=-1)) + 1
    stacked = np.stack(colourings, axis=1)
    _, groups = np.unique(stacked, axis=0, return_inverse=True)
    groups = groups.ravel()
    return groups, int(groups.max(initial=-1)) + 1


def _colours(shape: tuple, sizes: tuple) -> np.ndarray:
    """The colour of every flat coordinate of ``shape``: its index modulo
    ``sizes`` along each dimension, flattened over ``sizes``."""
    index = np.indices(shape).reshape(len(shape), -1)
    return np.ravel_multi_index(tuple(i % k for i, k in zip(index, sizes)), sizes)
