"""Compressed Jacobians: columns that share no row, finite-differenced together.

When a block's pattern is sparse or structured (``gradcheck.large.structure``:
elementwise, row-wise, block-diagonal over batches, banded), its columns fall
into ``G`` groups of columns that share no row. With a random weight ``w_j``
on every coordinate (sign random, magnitude uniform in [1, 2), see
``seeds.signed_weights``), the seed matrix ``S`` has one column per group,
and every producer builds ``J S`` instead of ``J``: the numerical side
differences along each group's direction (``G`` directions instead of ``N``
coordinates: 2 evaluations each, or 10 to 28 when extrapolating), forward
mode takes one jvp per group, and reverse mode decompresses row-grouped vjps
(``gradcheck.large.decompress``). The one comparator compares the cells entry by
entry, within the tolerances it uses for entries.

Why an error in any single entry still shows, and why a wrong sparsity in the
formula cannot hide. Let ``J`` be the true Jacobian, ``A`` the formula's and
``E = A - J``. Cell ``(i, g)`` of the comparison holds
``(E S)[i, g] = sum over j in g of w_j E[i, j]``.

1. The groups come from ``A``'s pattern ``P`` (read from a few exact rows of
   ``A``): columns of one group share no row of ``P``, so an error on ``P``
   is alone in its cell, where it shows as ``w_j E[i, j]`` against a
   tolerance computed for ``w_j J[i, j]``: exactly as in the dense
   comparison (``|w_j| >= 1``; when extrapolating, ``w_j`` also carries the
   coordinate's first step, which scales the cell and its tolerance alike).
2. An error off ``P`` (an entry the true Jacobian has and the formula lacks,
   such as a missing cross term, or one the formula has and the truth lacks)
   may share its cell with other errors. Its row's cell still compares
   ``A``'s cell (``0`` when the row has no entry of ``P`` in that group)
   with the numerical one, which holds the missing entry. The errors of one
   cell cancel only if their weights do: conditioned on every other weight,
   the weight ``w_1`` of the cell's largest error ``E_1`` must land in an
   interval of length ``2 tau / |E_1|`` (``tau`` the cell's tolerance),
   which has probability at most ``tau / |E_1|`` (the density of ``w_1`` is
   1/2 on each of ``[-2, -1)`` and ``[1, 2)``). An error 100 times the
   tolerance escapes its cell with probability at most 1 %, and a missing
   term escapes only if every cell it touches cancels. The weights come from
   the check's seed, drawn independently of the function; ``seed=`` repeats
   them.
3. The pattern is trusted only where correctness depends on it: reverse mode
   reconstructs the cells from vjps of row groups, which is exact only when
   ``A`` has no entry off ``P``. One more random product ``v^T A u`` (one
   vjp) is compared, to rounding, with the sum over the reconstructed
   entries; an entry of ``A`` off ``P`` makes them differ for every ``u, v``
   outside a set of measure zero (the difference is a nonzero polynomial in
   the Gaussian ``u`` and ``v``), and then that output's cells come from all
   ``M`` rows of ``A`` instead, multiplied by ``S``. Forward mode and finite
   differences push ``S`` through directly and need no pattern at all.

So the pattern decides the cost and how precisely a report can point at an
entry, never whether an error beyond the tolerances is seen.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from adcheck.gradcheck.large import listed
from adcheck.gradcheck.large.cells import seeded_forward, seeded_numerical
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.large.listed import sparse_rows
from adcheck.gradcheck.core.jacobian import Jacobian
from adcheck.gradcheck.large.seeds import Groups, signed_weights
from adcheck.gradcheck.core.sides import FORWARD, REVERSE, Side
from adcheck.gradcheck.large.structure import combined, propose, real_shape

#: rows (or columns) of the formula read to propose a pattern, per carrier
SAMPLES = 3
#: ``jacobian="auto"`` compresses only blocks with more entries than this in all
AUTO_ENTRIES = 2 ** 18
#: ... or with more input coordinates than this (each is a column to
#: difference, ten to twenty-eight evaluations when extrapolating: ctc_loss's
#: 16,000 log-probabilities into 16 losses took minutes of a sweep)
AUTO_COLUMNS = 2 ** 12
#: ... and only when the columns to difference drop at least this many times
AUTO_GAIN = 4


@dataclass
class Compression:
    """The seeds of every input and the patterns they came from."""

    seeds: dict         # in_idx -> seeds.Groups
    patterns: dict      # (out_idx, in_idx) -> structure.Pattern
    source: str         # the AD side the patterns were read from
    #: (out_idx, in_idx) -> (row group of each output coordinate, number of
    #: groups, row weights, (v, u): the random product that checks the
    #: pattern), drawn once so that reverse mode reconstructs the same cells
    #: every time
    rows: dict = field(default_factory=dict)

    @property
    def groups(self) -> int:
        return sum(s.count for s in self.seeds.values())

    def describe(self) -> str:
        kinds = sorted({p.describe() for p in self.patterns.values()})
        return "; ".join(kinds)


def shapes(problem, out_idx: int, in_idx: int) -> tuple:
    """The real shapes of a block's rows and columns."""
    layout = problem.layout
    return (real_shape(layout.out_shapes[out_idx], layout.out_complex[out_idx]),
            real_shape(layout.in_shapes[in_idx], layout.in_complex[in_idx]))


def _sample_positions(size: int, shape: tuple, rng) -> np.ndarray:
    """The centre coordinate (a full band is seen there) and random others."""
    centre = int(np.ravel_multi_index(tuple(n // 2 for n in shape), shape))
    others = rng.integers(0, size, SAMPLES - 1) if size > 1 else []
    return np.unique(np.concatenate([[centre], others]).astype(np.int64))


def detect(ev: Evaluator, side: Side, rng) -> dict:
    """A pattern for every (output, input) pair that requires grad, from the
    exact nonzeros of a few rows (reverse) or columns (forward) of the
    formula."""
    p = ev.problem
    found = {}
    for idx in side.carriers(p):
        size = side.carrier_size(p.layout, idx)
        base = side.base(p, idx)
        carrier_shape = real_shape(base.shape, np.iscomplexobj(base))
        where = _sample_positions(size, carrier_shape, rng)
        units = np.zeros((len(where), size))
        units[np.arange(len(where)), where] = 1.0
        results = side.products(ev, idx, side.vectors(p, idx, units),
                                "reading the formula's sparsity pattern")
        counts, poor = [], False
        for r in side.receivers(p):
            key = side.key(idx, r)
            if key[0] not in p.diff_out:
                continue
            k, hit = np.nonzero(side.real_rows(p, r, results[r], len(where)))
            counts.append(np.bincount(k, minlength=len(where)))
            rows, cols = (where[k], hit) if side is REVERSE else (hit, where[k])
            found[key] = propose(*shapes(p, *key), rows, cols)
            poor |= found[key].column_count * AUTO_GAIN > p.layout.in_size(key[1])
        # no band narrows the pattern, yet the sampled rows hold few entries (a
        # permutation): every row's entries, listed, give the groups
        if poor and counts and sparse_rows(np.concatenate(counts)):
            found.update(listed.read(ev, side, idx, lambda key: shapes(p, *key)))
    return found


def compression(ev: Evaluator, rng, scheme, side: Side) -> Compression:
    """Seeds for every input from the patterns ``side`` shows."""
    p = ev.problem
    patterns = detect(ev, side, rng)
    seeds = {}
    for in_idx in p.diff_in:
        mine = {o: patterns[o, in_idx] for o in p.diff_out if (o, in_idx) in patterns}
        colours = {o: pattern.column_colours() for o, pattern in mine.items()}
        size = p.layout.in_size(in_idx)
        groups, count = combined(list(colours.values())) if colours else \
            (np.zeros(size, dtype=np.int64), min(size, 1))
        weights = signed_weights(rng, size) * scheme.direction_scale(ev, in_idx)
        seeds[in_idx] = Groups(groups, weights, count, mine, colours)
    comp = Compression(seeds, patterns, side.mode)
    for (out_idx, in_idx), pattern in patterns.items():
        groups, m = pattern.row_colours(), p.layout.out_size(out_idx)
        check = (rng.standard_normal(m), rng.standard_normal(p.layout.in_size(in_idx)))
        comp.rows[out_idx, in_idx] = (groups, pattern.row_count, signed_weights(rng, m), check)
    return comp


def worth_it(ev: Evaluator, comp: Compression) -> bool:
    """``jacobian="auto"``: whether compressing pays (large blocks, many
    fewer columns to difference)."""
    columns = sum(ev.problem.layout.in_size(i) for i in ev.problem.diff_in)
    return large(ev) and comp.groups * AUTO_GAIN <= columns


def large(ev: Evaluator) -> bool:
    """Whether the blocks are large enough, or their columns many enough, for
    ``auto`` to try compressing."""
    p = ev.problem
    entries = sum(p.layout.out_size(o) * p.layout.in_size(i)
                  for o in p.float_out for i in p.diff_in)
    return entries > AUTO_ENTRIES or sum(p.layout.in_size(i) for i in p.diff_in) > AUTO_COLUMNS


def _note(comp: Compression, what: str) -> str:
    columns = sum(s.size for s in comp.seeds.values())
    return (f"{what}: {columns} input coordinates in {comp.groups} groups of columns that share "
            f"no row of the formula's pattern ({comp.describe()}, read from {comp.source} "
            "mode), one weighted direction per group; an entry alone in its cell is compared "
            "as in a dense check, wrong entries sharing a cell escape together with "
            "probability at most tolerance / |largest of them|")


def compressed_numerical(ev: Evaluator, comp: Compression, scheme) -> Jacobian:
    """``J S`` by finite differences along each group's direction."""
    return seeded_numerical(ev, comp.seeds, scheme, "compressed",
                            _note(comp, "finite differences of J S"))


def compressed_forward(ev: Evaluator, comp: Compression) -> Jacobian:
    """``A S`` from one jvp per group."""
    return seeded_forward(ev, comp.seeds, "compressed",
                          _note(comp, "forward mode A S, one jvp per group"))


def pattern_side(options) -> Side:
    """The side whose formula the pattern is read from: reverse when checked."""
    return REVERSE if options.check_backward_ad else FORWARD
