"""Jacobian producers: which one builds each Jacobian, and the public builders.

A *producer* takes an ``Evaluator`` and returns a ``Jacobian`` (one real
block per (output, input) pair, labelled with how it was obtained). The
comparator, the diagnosis and the report read every producer's Jacobian the
same way, so a new way of building one (chunked under a memory budget,
compressed by column groups, probed, or a wider-precision numerical side) is
a new producer chosen here from the ``Options``, not a flag passed down the
call chain.

- the expected side (``expected_producer``): the mpmath reference when one
  is given, else Richardson extrapolation (``precise``), else central
  differences at ``eps``. With ``precise`` and a formula narrower than
  double precision (float32, bfloat16, float16), the numerical side is the
  function's float64 run (``widening``) when it accepts float64 and
  ``low_precision`` allows, else differences in its own dtype (``indtype``);
  either attaches the allowance for the formula's rounding
  (``lowprecision``);
- the analytical side (``ad_producer``): every vjp or jvp of the side's
  unit vectors (``analytical.ad_blocks``).

``choose`` makes the ``Plan`` of one check from the options and the sizes
(``Options.jacobian``, default ``"auto"``):

- ``dense``: whole blocks, as above. ``auto`` keeps it for blocks of up to
  ``compressed.AUTO_ENTRIES`` entries in all and ``AUTO_COLUMNS`` input
  coordinates, so small checks run as they
  always have;
- ``compressed``: larger blocks whose pattern (read from the formula) puts
  the columns into at least ``AUTO_GAIN`` times fewer groups: every side
  builds ``J S`` (``gradcheck.large.compressed``, ``gradcheck.large.decompress``); when
  the cells do not fit in the memory budget (``Plan.streamed``), a chunk of
  cell columns at a time (``gradcheck.large.streamed``);
- ``chunked``: dense blocks too large for the memory budget, built and
  compared a chunk of columns at a time (``gradcheck.large.streamed``);
- ``probed`` (asked for; or by ``auto`` for a ``wide`` Jacobian, and for one
  whose every entry is estimated to take more than ``FIT`` of the check's
  ``time_limit``, ``too_slow``): ``J U`` for Gaussian directions ``U``, with
  the probability that a wrong entry escapes in the report
  (``gradcheck.large.probed``); for a low-precision second-order formula, with its
  rounding allowance carried through ``U`` (``gradcheck.large.lowprobed``).

``numerical_jacobian``, ``reverse_jacobian`` and ``forward_jacobian`` build
one Jacobian of a function directly.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable

import numpy as np

from adcheck.gradcheck.core import budget as budgets
from adcheck.gradcheck.core import fperrors
from adcheck.gradcheck.core.analytical import ad_blocks
from adcheck.gradcheck.large.compressed import (
    Compression,
    compressed_forward,
    compressed_numerical,
    compression,
    large,
    pattern_side,
    worth_it,
)
from adcheck.gradcheck.large.decompress import compressed_reverse
from adcheck.gradcheck.errors import UncheckableError
from adcheck.gradcheck.large.probed import (
    ProbePlan,
    probe_plan,
    probed_forward,
    probed_numerical,
    probed_reverse,
    projected,
)
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.jacobian import Jacobian
from adcheck.gradcheck.core.numerical import central_blocks
from adcheck.gradcheck.core.options import Options
from adcheck.gradcheck.core.problem import Problem
from adcheck.gradcheck.core.reuse import grad_output_taken
from adcheck.gradcheck.core.sameas import same_as_blocks
from adcheck.gradcheck.numerics.reference import reference_blocks
from adcheck.gradcheck.numerics.richardson_jacobian import richardson_blocks
from adcheck.gradcheck.numerics.scheme import Central, Extrapolated, scheme
from adcheck.gradcheck.lowprec.widening import attach_reference_allowance, wide_blocks, widened
from adcheck.gradcheck.lowprec.indtype import in_dtype_blocks
from adcheck.gradcheck.lowprec.lowprecision import is_narrow
from adcheck.gradcheck.large.lowprobed import probed_low_numerical, rounded_plan
from adcheck.gradcheck.core.sides import FORWARD, REVERSE, Side

Producer = Callable[[Evaluator], Jacobian]


@dataclass
class Plan:
    """How one check builds its Jacobians (see the module docstring)."""

    kind: str = "dense"
    compression: Compression | None = None
    epsilon: float = 0.0
    probes: ProbePlan | None = None
    #: a compressed or probed plan whose cells, held whole, would not fit in the
    #: budget: built and compared a chunk of cell columns at a time
    streamed: bool = False
    #: a probed plan of a low-precision formula: its float64 run, and the powers
    #: of two its directions were normalised by (``gradcheck.large.lowprobed``)
    wide: Problem | None = None
    scales: dict | None = None
    #: how the numerical side differences and how it is judged
    #: (``numerics.scheme``: central at ``eps``, or extrapolated when precise)
    scheme: Central | Extrapolated | None = None

    @property
    def seeds(self) -> dict | None:
        """The seeds of a compressed or probed plan, by input."""
        if self.probes is not None:
            return self.probes.seeds
        return None if self.compression is None else self.compression.seeds

    def against(self, side: Side, numerical: Jacobian, tolerances: dict | None) -> tuple:
        """What ``side``'s Jacobian is compared with, and the tolerances:
        ``numerical`` itself, or its rows projected (reverse mode, probed)."""
        if self.kind == "probed" and side is REVERSE:
            return projected(numerical, self.probes, self.scheme, self.epsilon)
        return numerical, tolerances


def entries(ev: Evaluator) -> int:
    """Real entries of every block together."""
    p = ev.problem
    return sum(p.layout.out_size(o) * p.layout.in_size(i) for o in p.float_out
               for i in p.diff_in)


def choose(ev: Evaluator, rng, options: Options, epsilon: float) -> Plan:
    """The ``Plan`` of a slow check (see the module docstring)."""
    plan = _choose(ev, rng, options, epsilon)
    plan.scheme = scheme(options)
    return plan


def _choose(ev: Evaluator, rng, options: Options, epsilon: float) -> Plan:
    kind = options.jacobian
    how = scheme(options)
    if options.reference is not None:
        kind = "dense"
        if not budgets.fits(ev.budget, entries(ev)):
            _refuse_reference_beyond_budget(ev, options)
    if options.precise and is_narrow(ev.problem):
        return _low_precision_plan(ev, rng, options, epsilon)
    if kind == "probed":
        child = np.random.default_rng(rng.integers(2**63))
        probes = probe_plan(ev, child, options.probes, how)
        return Plan(kind, None, epsilon, probes, streamed=not budgets.fits(
            ev.budget, probe_cells(ev, probes.k), budgets.CELL_COPIES))
    comp = None
    if kind == "compressed" or (kind == "auto" and large(ev)):
        child = np.random.default_rng(rng.integers(2**63))
        comp = compression(ev, child, how, pattern_side(options))
        kind = "compressed" if kind == "compressed" or worth_it(ev, comp) else "auto"
    if options.jacobian == "auto" and options.reference is None and \
            wide(ev, comp if kind == "compressed" else None):
        child = np.random.default_rng(rng.integers(2**63))
        return Plan("probed", None, epsilon, probe_plan(ev, child, max(options.probes, WIDE_PROBES),
                                                         how, exact_rows=True))
    if kind in ("auto", "dense"):   # every entry: whole blocks, or chunks of them
        kind = "dense" if budgets.fits(ev.budget, entries(ev)) else "chunked"
    if options.jacobian == "auto" and options.reference is None and \
            too_slow(ev, comp if kind == "compressed" else None, options):
        child = np.random.default_rng(rng.integers(2**63))
        k = max(options.probes, WIDE_PROBES)
        return Plan("probed", None, epsilon, probe_plan(ev, child, k, how),
                    streamed=not budgets.fits(ev.budget, probe_cells(ev, k),
                                              budgets.CELL_COPIES))
    if kind != "compressed":
        return Plan(kind, None, epsilon)
    return Plan(kind, comp, epsilon,
                streamed=not budgets.fits(ev.budget, cells(ev, comp), budgets.CELL_COPIES))


#: ``auto`` probes a Jacobian with at most this many rows per output ...
WIDE_ROWS = 64
#: ... and more columns than this to difference, even compressed
WIDE_COLUMNS = 512
#: ... along at least this many directions (a wrong entry escapes eight
#: Gaussian directions with odds far below 1e-12: ``Report.escape`` says)
WIDE_PROBES = 8


#: ``auto`` probes when building every entry is estimated to take more than this
#: share of the check's ``time_limit`` (the rest: the AD sides, a failure's diagnosis)
FIT = 0.5
#: seconds of extrapolation and error estimation per output entry and evaluation
#: (measured on the layer norms of issue 28: 0.5 to 3e-7 s on a busy 2-core VM)
PER_ENTRY = 2e-7


def too_slow(ev: Evaluator, comp: Compression | None, options: Options) -> bool:
    """Whether differencing every column (or group, ``comp``) is estimated to
    take more than ``FIT`` of ``options.time_limit``: the columns times the
    evaluations each needs, times a measured evaluation and the work per output
    entry. Estimated only for ``large`` Jacobians: a small one always fits."""
    if options.time_limit is None or not large(ev):
        return False
    p = ev.problem
    columns = comp.groups if comp is not None else sum(p.layout.in_size(i) for i in p.diff_in)
    rows = sum(p.layout.out_size(o) for o in p.float_out)
    calls = columns * scheme(options).calls
    estimate = calls * (_evaluation_seconds(ev) + rows * PER_ENTRY)
    return estimate > FIT * options.time_limit


def _evaluation_seconds(ev: Evaluator, n: int = 4) -> float:
    """Seconds per evaluation of the function, timed on a batch of ``n``."""
    import time
    p = ev.problem
    first = p.diff_in[0]
    start = time.perf_counter()
    ev.outputs_at(first, np.repeat(p.arrays[first][None], n, axis=0),
                  "timing an evaluation to choose the plan")
    return (time.perf_counter() - start) / n


def wide(ev: Evaluator, comp: Compression | None) -> bool:
    """Whether a Jacobian has few rows and too many columns to difference one
    by one (or group by group, ``comp``): ``auto`` then probes it along
    ``WIDE_PROBES`` directions and takes every row of the formula (``WIDE_ROWS``
    vjps at most), so both AD sides are compared cell by cell (ctc_loss: 16
    losses of 16,000 log-probabilities, 1,000 groups, each evaluation 30 ms)."""
    p = ev.problem
    columns = comp.groups if comp is not None else sum(p.layout.in_size(i) for i in p.diff_in)
    return large(ev) and columns > WIDE_COLUMNS and \
        all(p.layout.out_size(o) <= WIDE_ROWS for o in p.diff_out)


def _low_precision_plan(ev: Evaluator, rng, options: Options, epsilon: float) -> Plan:
    """Whole blocks (the allowance is per entry: neither compressed nor chunked,
    said in the report's plan), except a second-order check asked to probe, or
    a ``wide`` Jacobian under ``auto``, whose function runs in float64: its
    allowance is carried through the directions (``gradcheck.large.lowprobed``). Either way the whole Jacobian must fit in the
    budget, else ``UncheckableError`` says so."""
    probing = options.low_precision != "dtype" and (
        options.jacobian == "probed" and ev.problem.order == 2
        or options.jacobian == "auto" and options.reference is None and wide(ev, None))
    # the probed allowance starts from the float64 run's whole reverse Jacobian
    # (one copy and its terms); a dense check holds every comparison copy
    if not budgets.fits(ev.budget, entries(ev), PROBED_COPIES if probing else
                        budgets.COMPARISON_COPIES):
        _refuse_beyond_budget(ev, options)
    if probing:
        run64, _ = widened(ev.problem)
        if run64 is not None:
            child = np.random.default_rng(rng.integers(2**63))
            k = options.probes if options.jacobian == "probed" else \
                max(options.probes, WIDE_PROBES)
            probes, scales = rounded_plan(ev, child, k)
            return Plan("probed", None, epsilon, probes, wide=run64, scales=scales)
    return Plan("dense", None, epsilon)


#: what a probed low-precision check holds per entry of the whole Jacobian: the
#: float64 run's reverse Jacobian and the allowance built from it
PROBED_COPIES = 2


def _refuse_beyond_budget(ev: Evaluator, options: Options):
    """Whole blocks beyond the budget: refused, as the budget promises, rather
    than built (op_db's slice in float32: minutes past any timeout, or killed).
    The message names the budget asked for (``ev.budget`` is what is left of it
    beside the evaluations, 511 MiB or 512 by the process's state)."""
    p = ev.problem
    raise UncheckableError(
        f"{p.name}: a precise check of a formula narrower than double precision "
        f"compares whole Jacobians, and this one has {entries(ev):,} entries, beyond "
        f"the memory budget of {options.memory_budget / 2**20:.0f} MiB; raise the budget "
        "(memory_budget=, --memory-budget) to check it, or check it in float64, where "
        "large Jacobians are compressed or built in chunks")


def _refuse_reference_beyond_budget(ev: Evaluator, options: Options):
    """The mpmath reference gives whole blocks only: beyond the budget the
    check is refused, never compared with finite differences instead (a check
    does not swap what it compares against without saying so)."""
    p = ev.problem
    raise UncheckableError(
        f"{p.name}: a check against the mpmath reference (reference=) compares whole "
        f"Jacobians, and this one has {entries(ev):,} entries, beyond the memory budget of "
        f"{options.memory_budget / 2**20:.0f} MiB; raise the budget (memory_budget=, "
        "--memory-budget) to check it against the reference, or leave out reference= to compare with finite "
        "differences in chunks")


def cells(ev: Evaluator, comp: Compression) -> int:
    """Real cells of every compressed block together."""
    p = ev.problem
    return sum(p.layout.out_size(o) * comp.seeds[i].count for o in p.float_out
               for i in p.diff_in)


def probe_cells(ev: Evaluator, k: int) -> int:
    """Real cells of every probed block together (``k`` directions per input)."""
    p = ev.problem
    return k * len(p.diff_in) * sum(p.layout.out_size(o) for o in p.float_out)


def expected_producer(options: Options, plan: Plan | None = None) -> Producer:
    """The producer of the Jacobian the AD sides are compared against: with
    ``same_as`` on a dense plan, the twin's (``core.sameas``), which falls back
    to the ordinary one where the twin cannot judge."""
    ordinary = _ordinary_producer(options, plan)
    if options.same_as is not None and (plan is None or plan.kind == "dense"):
        return partial(same_as_blocks, twin=options.same_as, otherwise=ordinary)
    return ordinary


def _ordinary_producer(options: Options, plan: Plan | None) -> Producer:
    if plan is not None and plan.kind == "probed" and plan.wide is not None:
        checked = tuple(mode for mode, wanted in (("reverse", options.check_backward_ad),
                                                  ("forward", options.check_forward_ad))
                        if wanted)
        return partial(probed_low_numerical, plan=plan.probes, scales=plan.scales,
                       wide=plan.wide, sides=checked)
    if plan is not None and plan.kind == "probed":
        return partial(probed_numerical, plan=plan.probes, scheme=plan.scheme)
    if plan is not None and plan.kind == "compressed":
        return partial(compressed_numerical, comp=plan.compression, scheme=plan.scheme)
    if options.reference is not None:
        reference = partial(reference_blocks, ref=options.reference)
        return partial(low_precision_reference, reference=reference) if options.precise \
            else reference
    if options.precise:
        # a dense second-order check may take its block in the grad_outputs from
        # the sample's reverse check instead of differencing it (core.reuse_gg)
        shared = ("reverse", options.memory_budget) if plan is not None and plan.kind == "dense" \
            else None
        return partial(precise_blocks, low_precision=options.low_precision, shared=shared)
    return partial(central_blocks, eps=options.eps)


def precise_blocks(ev: Evaluator, low_precision: str = "auto",
                  shared: tuple | None = None) -> Jacobian:
    """Richardson extrapolation; for a low-precision formula, on its float64 run
    or in its own dtype as ``low_precision`` says (see ``Options``). ``shared``:
    the key under which a sample's reverse Jacobian may have been kept for this
    second-order check (``core.reuse.grad_output_taken``)."""
    if not is_narrow(ev.problem):
        taken = grad_output_taken(ev, shared) if shared is not None else None
        return richardson_blocks(ev, taken or None)
    why = "low_precision='dtype' was asked for"
    if low_precision != "dtype":
        wide, why = widened(ev.problem)
        if wide is not None:
            return wide_blocks(ev, wide)
        if low_precision == "float64":
            raise UncheckableError(
                f"{ev.problem.name}: low_precision='float64' needs the function to run in "
                f"float64, but {why}; pass low_precision='auto' to difference it in its own dtype")
    return in_dtype_blocks(ev, why)


def low_precision_reference(ev: Evaluator, reference: Producer) -> Jacobian:
    """The mpmath reference; for a low-precision formula with the allowance for
    its rounding (from its float64 run when it has one)."""
    jac = reference(ev)
    if is_narrow(ev.problem):
        wide, _ = widened(ev.problem)
        attach_reference_allowance(ev, jac, wide)
    return jac


def ad_producer(side: Side, options: Options, plan: Plan | None = None) -> Producer:
    """The producer of ``side``'s Jacobian."""
    if plan is not None and plan.kind == "probed":
        if side is FORWARD:
            return partial(probed_forward, plan=plan.probes)
        return partial(probed_reverse, plan=plan.probes)
    if plan is not None and plan.kind == "compressed":
        if side is FORWARD:
            return partial(compressed_forward, comp=plan.compression)
        return partial(compressed_reverse, comp=plan.compression, epsilon=plan.epsilon)
    return partial(ad_blocks, side=side)


@fperrors.guarded
def numerical_jacobian(func, inputs, *, eps: float = 1e-6, precise: bool = False) -> Jacobian:
    """The Jacobian of ``func`` at ``inputs`` by finite differences.

    Each real coordinate of each input that requires grad is moved by
    ``+eps`` and ``-eps`` (a complex element along its real and then its
    imaginary axis) and the outputs' real coordinates are differenced:
    ``(f(x + eps e_c) - f(x - eps e_c)) / (2 eps)``. Returns a ``Jacobian``
    labelled ``numerical``; ``jac[out_idx, in_idx]`` is a real array of shape
    ``(output real size, input real size)``.

    With ``precise=True`` the entries come from Richardson extrapolation over
    a sequence of steps (``eps`` is then ignored) and ``jac.errors`` holds an
    estimate of each entry's absolute error.
    """
    produce = expected_producer(Options(eps=eps, precise=precise))
    return produce(Evaluator(Problem(func, inputs)))


@fperrors.guarded
def reverse_jacobian(func, inputs) -> Jacobian:
    """The Jacobian of ``func`` at ``inputs`` from vector-Jacobian products.

    The function runs once; then, for every real coordinate of every output
    that requires grad, one vjp with a unit grad_output (``1``, or ``1j`` for
    the imaginary part of a complex output) gives one row. Returns a
    ``Jacobian`` labelled ``reverse`` in the layout of ``numerical_jacobian``.
    """
    return ad_blocks(Evaluator(Problem(func, inputs)), REVERSE)


@fperrors.guarded
def forward_jacobian(func, inputs) -> Jacobian:
    """The Jacobian of ``func`` at ``inputs`` from Jacobian-vector products.

    For every real coordinate of every input that requires grad, the function
    runs once on dual tensors whose tangent is that unit direction (``1``, or
    ``1j`` for the imaginary part of a complex input); the output tangents
    give one column. Returns a ``Jacobian`` labelled ``forward``.
    """
    return ad_blocks(Evaluator(Problem(func, inputs)), FORWARD)
