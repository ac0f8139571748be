"""Probed Jacobians: ``J U`` for a few Gaussian directions, and the odds an error escapes.

Beyond what the memory budget and the time allow entry by entry, a check can
still compare every output coordinate along ``k = probes`` random
directions: ``U`` holds ``k`` Gaussian columns (when extrapolating, scaled by
each coordinate's first step), the numerical side differences along them
(``k`` directions instead of ``N`` coordinates) and forward mode takes ``k``
jvps; their ``M x k`` cells are compared entry by entry. Reverse mode
compares ``W^T A U`` with ``W^T J U`` for ``k`` unit Gaussian rows ``W``
(``k`` vjps): ``k x k`` scalars.

How likely a single wrong entry escapes. Let entry ``(i, j)`` be wrong by
``delta = r * rho_i``, ``rho_i`` the norm of row ``i`` of ``J D`` (``D`` the
steps' scaling, or the identity), and let the cell tolerance be
``c |(J u)_i| + f`` (``c`` the relative allowance: ``sqrt(eps) / 2`` when
extrapolating, ``rtol`` otherwise; ``f`` the absolute part). In forward
mode the cell's error is ``delta * g_j`` for the Gaussian ``g_j`` the
direction puts on ``j``, while ``(J u)_i = a g_j + s Z`` with ``Z``
independent of ``g_j`` and ``a^2 + s^2 = rho_i^2``. Escaping means
``r rho_i |g_j| <= c |a g_j + s Z| + f``, which implies
``|g_j| <= alpha |Z| + beta`` with ``alpha = c / (r - c)`` and
``beta = f / ((r - c) rho_i)``. So one direction misses it with
probability at most ``E[erf((alpha |Z| + beta) / sqrt 2)]`` (about
``(2 / pi) alpha`` when ``beta`` is small), and ``k`` independent directions
with its ``k``-th power (``forward_escape``). In reverse mode a cell's error
is ``delta w_i g_j`` against a tolerance of about ``c |w|^T |J u|``, which
sums over the whole block: with ``t`` that tolerance over ``delta``, the
entry escapes all ``k x k`` cells with probability
``P(max_a |X_a| * max_b |Y_b| <= t)`` for independent standard Gaussians
(``reverse_escape``); ``t`` grows with the square root of the number of
rows, so reverse mode alone resolves single entries of large blocks poorly,
and says so. The report states both probabilities for a given ``r``
(``Report.coverage``); ``bench/probe_escape.py`` plants such errors and
measures how often they escape.
"""
from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass

import mpmath
import numpy as np

from adcheck.gradcheck.core import budget as budgets
from adcheck.gradcheck.verdict.adjoint import ADJOINT_ULPS
from adcheck.gradcheck.large.cells import seeded_forward, seeded_numerical
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.jacobian import Jacobian
from adcheck.gradcheck.numerics.precise import AD_ULPS, SAFETY, ad_scales
from adcheck.gradcheck.core.coords import largest_finite
from adcheck.gradcheck.large.seeds import Probes
from adcheck.gradcheck.core.sides import REVERSE

#: the relative size of a wrong entry the report states escape odds for
STATED_RELATIVE = 1e-6
#: where the tolerance's relative part reaches that: how many times it the stated size is
ABOVE_ALLOWANCE = 32

_erf = np.vectorize(math.erf)


@dataclass
class ProbePlan:
    """The directions of a probed check: ``seeds`` by input, ``rows`` (``W``,
    ``(k, M)``, unit rows) by output."""

    seeds: dict
    rows: dict
    #: the rows ``W`` are the identity (few outputs: ``exact_rows``), so reverse
    #: mode compares ``A U`` cell by cell, as forward mode does
    exact: bool = False

    @property
    def k(self) -> int:
        return next(iter(self.seeds.values())).count


def probe_plan(ev: Evaluator, rng, k: int, scheme, exact_rows: bool = False) -> ProbePlan:
    """Gaussian directions for every input (scaled as the steps are) and unit
    Gaussian rows for every output that requires grad; with ``exact_rows``,
    the identity's rows instead (one vjp per output coordinate: every row of
    ``A``, for outputs few enough that this is cheap)."""
    p = ev.problem
    seeds = {}
    for i in p.diff_in:
        draws = rng.standard_normal((k, p.layout.in_size(i)))
        draws *= scheme.direction_scale(ev, i)   # (in place: k copies of the input)
        seeds[i] = Probes(draws)
    rows = {}
    for o in p.diff_out:
        if exact_rows:
            rows[o] = np.eye(p.layout.out_size(o))
            continue
        w = rng.standard_normal((k, p.layout.out_size(o)))
        w /= np.maximum(np.linalg.norm(w, axis=1, keepdims=True), 1e-300)   # (in place)
        rows[o] = w
    return ProbePlan(seeds, rows, exact_rows)


def probed_numerical(ev: Evaluator, plan: ProbePlan, scheme) -> Jacobian:
    return seeded_numerical(ev, plan.seeds, scheme, "probed",
                            f"finite differences of J U for {plan.k} Gaussian directions")


def probed_forward(ev: Evaluator, plan: ProbePlan) -> Jacobian:
    return seeded_forward(ev, plan.seeds, "probed", f"forward mode A U, {plan.k} jvps")


def probed_reverse(ev: Evaluator, plan: ProbePlan) -> Jacobian:
    """``W^T A U``: ``k`` vjps per output, their rows multiplied by ``U``."""
    p = ev.problem
    start, before = time.perf_counter(), p.counts["vjp"]
    jac = Jacobian("reverse", p.layout, seeds=plan.seeds, producer="probed",
                   note=f"reverse mode W^T A U, {plan.k} vjps of unit Gaussian rows W",
                   row_seeds=plan.rows)
    for o in p.diff_out:
        w = plan.rows[o]
        parts = []
        for a, b in budgets.chunks(len(w), ev.batch_size("vjp")):
            found = REVERSE.products(ev, o, REVERSE.vectors(p, o, w[a:b]),
                                     f"computing vjps of probe rows of output {o}")
            parts.append({i: REVERSE.real_rows(p, i, found[i], b - a) for i in p.diff_in})
        for i in p.diff_in:
            jac.blocks[o, i] = plan.seeds[i].compress(np.concatenate([q[i] for q in parts]))
    jac.counts = {"vjp": p.counts["vjp"] - before}
    jac.seconds = time.perf_counter() - start
    return jac


def projected(numerical: Jacobian, plan: ProbePlan, scheme, epsilon: float) -> tuple:
    """``W^T (J U)`` and its tolerances, for reverse mode to be compared with:
    the projection's error estimate plus the relative allowance of every cell
    it sums (``c |w|^T |J u|``), plus rounding of the sum."""
    jac = Jacobian("numerical", numerical.layout, seeds=numerical.seeds, producer="probed",
                   note=numerical.note, row_seeds=plan.rows)
    tolerances = {}
    relative = scheme.relative(epsilon)
    # (the dense check's rule for a block zero throughout, in precise mode only)
    scales = ad_scales(numerical) if numerical.errors is not None and \
        numerical.allowance is None else None
    for (o, i), cells in numerical.blocks.items():
        if o not in plan.rows:
            continue
        w = plan.rows[o]
        jac.blocks[o, i] = w @ cells
        if numerical.allowance is not None:   # a low-precision formula's rounding
            tol = np.abs(w) @ numerical.allowance[o, i]
            tol = tol + (numerical.projected_allowance or {}).get((o, i), 0.0)
            tol = tol + (SAFETY * (np.abs(w) @ numerical.errors[o, i])
                         if numerical.errors is not None else scheme.absolute)
        else:
            errors = None if numerical.errors is None else numerical.errors[o, i]
            tol = projection_tolerance(w, cells, cell_tolerance(cells, errors, relative),
                                       epsilon)
            tol = tol + (0.0 if errors is not None else scheme.absolute)
            if scales is not None and largest_finite(cells) == 0:
                tol = tol + zero_block_tolerance(w, scales[o, i], epsilon)
        tolerances[o, i] = tol + 1e-300
    return jac, tolerances


def zero_block_tolerance(w: np.ndarray, scale, epsilon: float) -> np.ndarray:
    """What the rounding of AD may leave in the scalars ``W^T A U`` of a block
    that is zero throughout: ``AD_ULPS`` ulps of ``scale`` per entry (by cell
    column, in cell units: ``precise.ad_scales``, which takes it from the
    output's other blocks), summed through ``|W|``. The projected cells of
    such a block have no magnitude of their own for ``projection_tolerance``
    to count ulps of, so without it any rounding fails them (torch's double
    backward of logcumsumexp: 3e-10 where the tolerance was 1.8e-13)."""
    return AD_ULPS * epsilon * np.abs(w).sum(axis=1)[:, None] * np.atleast_1d(scale)[None, :]


def cell_tolerance(cells: np.ndarray, errors: np.ndarray | None, relative: float) -> np.ndarray:
    """A cell's tolerance but its absolute part: ``relative`` of itself, plus
    ``SAFETY`` times its error estimate when there is one."""
    tol = relative * np.abs(cells)
    return tol if errors is None else tol + SAFETY * errors


def projection_tolerance(w: np.ndarray, cells: np.ndarray, cell_tol: np.ndarray,
                         epsilon: float) -> np.ndarray:
    """The tolerance of ``w @ cells`` (reverse mode's ``W^T J U``), but its absolute
    part, from the cells' own (``cell_tolerance``): each cell trusted to its
    tolerance, so their sum to the sum of theirs (the cells of an SVD's
    derivative cancel in it), plus the rounding of the sum. The one formula of
    both the whole check and the streamed one (``probestream``). Why this and
    not the root-sum-square, on exact values (``bench/probed_tolerance.md``):
    AD values each off by the dense allowance at random signs exceed it in 6 %
    of cells, the root-sum-square in 38 % (the bound ``|w|^T |J| |u|``, in
    none, needs ``|J|``, which probes do not see)."""
    magnitude = np.abs(w)
    return magnitude @ cell_tol + ADJOINT_ULPS * epsilon * (magnitude @ np.abs(cells))


def forward_escape(alpha: float, beta: float, k: int) -> float:
    """``E[erf((alpha |Z| + beta) / sqrt 2)] ** k`` (see the module docstring)."""
    z = np.linspace(0.0, 9.0, 4001)
    density = np.sqrt(2 / np.pi) * np.exp(-z ** 2 / 2)
    one = float(np.trapezoid(_erf((alpha * z + beta) / math.sqrt(2)) * density, z))
    return min(1.0, one) ** k


def reverse_escape(t: float, k_rows: int, k_cols: int) -> float:
    """``P(max of k_rows |X| times max of k_cols |Y| <= t)``, standard Gaussians."""
    y = np.geomspace(1e-8, 12.0, 6001)
    cdf = _erf(y / math.sqrt(2)) ** k_cols
    inner = _erf(np.minimum(t / y, 40.0) / math.sqrt(2)) ** k_rows
    return float(min(1.0, np.sum(inner[1:] * np.diff(cdf)) + cdf[0]))


def escape_odds(numerical: Jacobian, tolerances: dict, reverse_tolerances: dict | None,
                plan: ProbePlan, scheme, epsilon: float, r: float = STATED_RELATIVE,
                relative: float | None = None) -> dict:
    """By mode, the probability that one entry wrong by ``r`` times its row's
    norm escapes every comparison, for the median row of each block (the
    largest over blocks). ``relative``: the part of the tolerance proportional
    to a cell (``c``; by default the scheme's); the rest counts as ``f``."""
    c = scheme.relative(epsilon) if relative is None else relative
    summaries = {}
    for key, cells in numerical.blocks.items():
        if not cells.size:
            continue
        rest = None
        if plan.exact and reverse_tolerances and key in reverse_tolerances:
            rest = np.maximum(reverse_tolerances[key] - c * np.abs(cells), 0.0).mean(axis=1)
        summaries[key] = row_summary(*row_statistics(cells, tolerances[key], c), rest)
    return odds_of_rows(summaries, reverse_tolerances, plan.k, c, r)


def row_statistics(cells: np.ndarray, tolerances: np.ndarray, c: float) -> tuple:
    """Per row of a block of cells: the sum of the squared cells and the sum of
    their tolerances' absolute parts (``f``), over the columns given (a check
    that sees its cells a few columns at a time adds them up), and the count."""
    with np.errstate(invalid="ignore", over="ignore"):   # (a cell of 1e300 squares to inf)
        return (np.sum(cells ** 2, axis=1), np.maximum(tolerances - c * np.abs(cells),
                                                       0.0).sum(axis=1), cells.shape[1])


def row_summary(squares: np.ndarray, floors: np.ndarray, count: int,
                rest: np.ndarray | None = None) -> dict | None:
    """What the escape odds need of a block's ``row_statistics`` (summed over
    its ``count`` columns): the median over rows of the absolute part of a
    cell's tolerance relative to the row's norm (``ratio``), the median norm
    (``typical``) and the number of rows; with ``rest`` (per row, the mean
    absolute part of reverse mode's tolerance when ``W`` is the identity),
    its median ratio too (``exact``). ``None`` for a block of zeros."""
    # (J u)_i^2 summed over ``count`` Gaussian directions is rho_i^2 times a
    # chi-square of ``count`` degrees: the median row of it over ``count``
    # is short of rho^2 by that chi-square's median over ``count`` (0.45 for one)
    rho = np.sqrt(squares / count / chi2_median_mean(count))   # ~ the row norms of J D
    ok = rho > 0
    if not ok.any():
        return None
    found = {"ratio": float(np.median(floors[ok] / count / rho[ok])),
             "typical": float(np.median(rho[ok])), "rows": len(rho)}
    if rest is not None:
        found["exact"] = float(np.median(rest[ok] / rho[ok]))
    return found


@functools.lru_cache(maxsize=64)
def chi2_median_mean(count: int) -> float:
    """The median of a chi-square of ``count`` degrees of freedom, over ``count``."""
    # at double precision whatever the caller's mpmath works at: the bisection's
    # tolerance follows the working precision, and at 80 digits (a program of the
    # user's, or a test, that set mpmath.mp.dps) its 100 halvings fell short and
    # raised "Could not find root" inside every probed check
    with mpmath.workprec(53):
        half = mpmath.mpf(count) / 2
        below = lambda x: mpmath.gammainc(half, 0, x / 2, regularized=True) - 0.5  # noqa: E731
        return float(mpmath.findroot(below, (mpmath.mpf(0), mpmath.mpf(4 * count + 8)),
                                     solver="bisect")) / count


def odds_of_rows(summaries: dict, reverse_tolerances: dict | None, k: int, c: float,
                 r: float = STATED_RELATIVE) -> dict:
    """``escape_odds`` from each block's ``row_summary``. Where the tolerance's
    relative part ``c`` is not below ``r`` (a float32 model's check: no entry
    wrong by 1e-6 can be told from rounding), the odds are stated for the
    first power of ten at least ``ABOVE_ALLOWANCE`` times ``c`` instead of
    a useless certainty of escape."""
    if r <= c:
        r = 10.0 ** math.ceil(math.log10(ABOVE_ALLOWANCE * c))
    forward, reverse = 0.0, 0.0
    for key, rows in summaries.items():
        beta = rows["ratio"] / (r - c) if rows else 0.0
        forward = max(forward, forward_escape(c / (r - c), beta, k))
        if rows is None:   # a zero block has no row norm for an entry to be wrong by a part of
            continue
        if "exact" in rows:
            # every row of A, times U: a wrong entry escapes as in forward mode
            reverse = max(reverse, forward_escape(c / (r - c), rows["exact"] / (r - c), k))
        elif reverse_tolerances and key in reverse_tolerances:
            # a unit row w puts about 1 / sqrt(M) on the wrong entry's row
            t = float(np.median(reverse_tolerances[key])) * math.sqrt(rows["rows"]) / \
                max(r * rows["typical"], 1e-300)
            reverse = max(reverse, reverse_escape(t, k, k))
    return {"forward": forward, "reverse": reverse, "relative_error": r}
