"""The one Jacobian type every builder returns.

A ``Jacobian`` holds one real block per (output, input) pair, rows for the
output's real coordinates and columns for the input's (see ``coords``), and
a ``mode`` label saying how it was obtained (one of ``gradcheck.core.modes.SOURCES``:
``numerical``, ``reverse``, ``forward``, ``fast-reverse``, ``fast-forward`` or
``reference``). Producers may attach a per-entry absolute error estimate
(``errors``). Fast mode's projections are Jacobians too, in the all-real
``projection_layout``: one (k, 1) column of scalars per pair.

A Jacobian may hold its blocks compressed: with ``seeds`` (by input index,
see ``gradcheck.large.seeds``) block ``(out_idx, in_idx)`` is ``J S`` for the seed
matrix ``S = seeds[in_idx]``: its columns are cells, not input coordinates,
and ``complex_form`` leaves them as they are. ``producer`` names what made it
(``dense``, ``compressed``, ``probed``, ``chunked``) and ``note`` says what
it could have missed, for the report. With ``row_seeds`` (by output index)
the rows are projected too: the block is ``W^T J S``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from adcheck.gradcheck.core import coords
from adcheck.gradcheck.core.modes import SOURCES
from adcheck.gradcheck.core.serialize import json_array

#: the labels a Jacobian may carry
MODES = tuple(SOURCES)


@dataclass(frozen=True)
class Layout:
    """Shapes and complexness of the checked inputs and outputs, by index."""

    in_shapes: dict
    in_complex: dict
    out_shapes: dict
    out_complex: dict

    def __post_init__(self):
        # the real sizes, asked for in every loop over the blocks (a layout's
        # shapes do not change): each computed once, when first asked for
        object.__setattr__(self, "_in_sizes", {})
        object.__setattr__(self, "_out_sizes", {})
        object.__setattr__(self, "_projection", None)   # (``projection_layout``'s, once)

    def in_size(self, in_idx: int) -> int:
        """Real coordinates of input ``in_idx``."""
        size = self._in_sizes.get(in_idx)
        if size is None:
            size = self._in_sizes[in_idx] = coords.real_size(self.in_shapes[in_idx],
                                                             self.in_complex[in_idx])
        return size

    def out_size(self, out_idx: int) -> int:
        """Real coordinates of output ``out_idx``."""
        size = self._out_sizes.get(out_idx)
        if size is None:
            size = self._out_sizes[out_idx] = coords.real_size(self.out_shapes[out_idx],
                                                               self.out_complex[out_idx])
        return size


def projection_layout(layout: Layout) -> Layout:
    """All-real layout with the same indices: projections are (k, 1) columns of scalars."""
    if layout._projection is None:   # (fast mode asks once per side and for the numbers)
        ins = {i: (1,) for i in layout.in_shapes}
        outs = {o: (1,) for o in layout.out_shapes}
        object.__setattr__(layout, "_projection",
                           Layout(ins, {i: False for i in ins}, outs, {o: False for o in outs}))
    return layout._projection


def cell_layout(layout: Layout, seeds: dict | None) -> Layout:
    """``layout`` with each seeded input counted in cells: all-real, one
    coordinate per seed column (what random projections of compressed blocks
    are drawn in)."""
    if not seeds:
        return layout
    shapes = {i: (seeds[i].count,) if i in seeds else s for i, s in layout.in_shapes.items()}
    complex_ = {i: False if i in seeds else c for i, c in layout.in_complex.items()}
    return Layout(shapes, complex_, layout.out_shapes, layout.out_complex)


@dataclass
class Jacobian:
    """Jacobian blocks of one mode, indexed ``jac[out_idx, in_idx]``.

    ``jac[out_idx, in_idx]`` is a real NumPy array of shape
    ``(real size of output, real size of input)``: entry ``[r, c]`` is the
    derivative of output coordinate ``r`` with respect to input coordinate
    ``c``. ``jac.complex_form(out_idx, in_idx)`` combines a complex input's
    column pairs into ``d/dx + 1j * d/dy``, the form PyTorch shows and
    compares. ``errors``, when present, maps the same keys to per-entry
    absolute error estimates.
    """

    mode: str
    layout: Layout
    blocks: dict = field(default_factory=dict)
    errors: dict | None = None
    #: entries finite differences could not resolve (every step straddled a jump
    #: or a kink of the function), boolean blocks by key, or ``None``: no evidence
    unresolved: dict | None = None
    #: what its NaN entries were found to be (``verdict.offdomain.Domain``: entries
    #: of coordinates the function is defined at but not beside, left out; columns
    #: differenced within a narrow band); ``None``: not looked at
    off_domain: object = None
    counts: dict = field(default_factory=dict)
    seconds: float = 0.0
    seeds: dict | None = None
    producer: str = "dense"
    note: str | None = None
    #: by output index, the rows ``W`` of ``W^T J S`` when the rows are
    #: projected too (reverse mode in a probed check)
    row_seeds: dict | None = None
    #: the low-precision producers' allowance for the analytical side's rounding
    #: in its dtype, per entry, keyed as ``blocks`` (see ``gradcheck.lowprec.lowprecision``)
    allowance: dict | None = None
    #: the same for the reverse-mode scalars ``W^T A S`` of a probed check, added
    #: to what ``allowance`` gives them through ``W`` (``gradcheck.large.lowprobed``)
    projected_allowance: dict | None = None
    #: what precision a comparison against this Jacobian has (a
    #: ``gradcheck.numerics.precision.Precision`` without its resolution), or ``None``
    precision: object = None

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"unknown Jacobian mode {self.mode!r}; expected one of {MODES}")

    def __getitem__(self, key) -> np.ndarray:
        return self.blocks[tuple(key)]

    def __contains__(self, key) -> bool:
        return tuple(key) in self.blocks

    def keys(self):
        return self.blocks.keys()

    def compressed(self, in_idx: int) -> bool:
        """Whether the blocks of input ``in_idx`` hold cells of ``J S``."""
        return bool(self.seeds) and in_idx in self.seeds

    def complex_form(self, out_idx: int, in_idx: int) -> np.ndarray:
        """The block with complex-input columns combined (PyTorch's form);
        compressed blocks as they are."""
        block = self.blocks[out_idx, in_idx]
        if self.compressed(in_idx):
            return block
        return coords.complex_columns(block, self.layout.in_complex[in_idx])

    def error_form(self, out_idx: int, in_idx: int) -> np.ndarray | None:
        """Per-entry error estimate in the shape of ``complex_form``."""
        return self._entry_form(self.errors, out_idx, in_idx)

    def allowance_form(self, out_idx: int, in_idx: int) -> np.ndarray | None:
        """Per-entry ``allowance`` in the shape of ``complex_form``."""
        return self._entry_form(self.allowance, out_idx, in_idx)

    def _entry_form(self, table, out_idx, in_idx):
        if not table or (out_idx, in_idx) not in table:
            return None
        err = table[out_idx, in_idx]
        if self.layout.in_complex[in_idx] and not self.compressed(in_idx):
            return np.hypot(err[:, 0::2], err[:, 1::2])
        return err

    def to_dict(self) -> dict:
        """A JSON-serializable dict of the real blocks (non-finite as text)."""
        pairs = []
        for (out_idx, in_idx), block in sorted(self.blocks.items()):
            pairs.append({"out_idx": out_idx, "in_idx": in_idx,
                          "shape": list(block.shape), "values": json_array(block)})
        result = {"mode": self.mode, "pairs": pairs, "counts": dict(self.counts),
                  "seconds": self.seconds, "producer": self.producer, "note": self.note,
                  "seeds": None if not self.seeds else
                  {str(i): {"kind": s.kind, "count": s.count} for i, s in self.seeds.items()}}
        if self.precision is not None:
            result["precision"] = self.precision.to_dict()
        return result
