"""The rounding noise a function's outputs carry, measured rather than assumed.

Richardson's error estimate assumes each function value is off by a few
ulps of itself. That holds for elementwise arithmetic, not for outputs a
normwise-stable algorithm computes (an SVD, a QR, a solve): pinverse's
small entries carry errors of the size of an ulp of its largest entry, and
a finite difference of them is off by that error over the step. So the
outputs are evaluated at the input moved at random by a few ulps of the
largest input (of its own size for a coordinate far smaller), and the
second difference ``f(x + s) + f(x - s) - 2 f(x)`` of each output coordinate
(about its noise, since the function's curvature over so small a move is
negligible) becomes a floor under that coordinate's rounding noise.

Moves of a few ulps do not see rounding that an intermediate makes in
stairs wider than they are, and second differences do not see rounding
that is odd about ``x``, which is the part a central difference sees:
tanh's first derivative ``v (1 - tanh(x)^2)`` at ``|x|`` of 7 to 9 is a
staircase of stairs ``|v|`` ulps of 1 high (an ulp of tanh, ``1e5`` to
``1e7`` ulps of the result) and ``3e-11`` to ``2e-9`` wide, and over moves that are
equally spaced (``x +- w``, ``x +- 2w``, or Richardson's halving steps) the
rounding often aliases to a linear function of the move: a wrong slope,
the same at every step, that no comparison of steps finds. So the input
also moves along one random direction ``d`` by four multiples ``c`` of it
(``WIDE``: powers of the input's epsilon, of unrelated sizes), and the
slopes ``S = (f(x + c d) - f(x - c d)) / 2c`` they give are compared: they
differ by the rounding over ``c`` (the curvature term, ``c^2`` times the
third derivative, is far below it), so ``|S_j - S_k| / (1/c_j + 1/c_k)`` is
a floor too.

On small arrays an evaluation costs far more than its points, so the moves
ride in the first evaluation of the finite differences of the same input
(``riding_moves``, ``measured_from``; ``gradcheck.numerics.quotients``), and
``noise_floor`` evaluates them on its own only where that does not fit the
memory budget: the same points, the same floor.

What the cap takes off a floor, up to ``CAP_ULPS`` ulps of 1 (or of the
largest input), is kept apart (``unit_rounding``): not a floor under every
quotient, but the noise of the deep steps where a wide one resolves the
slope (``stairs.unit_noise``).
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.core import budget as budgets
from adcheck.gradcheck.core import coords
from adcheck.gradcheck.numerics.fixed import kept

MOVES = 4           # pairs of moves; the floor is the largest second difference
MOVE_ULPS = 4       # each coordinate moves by up to this many units of its rounding
#: the wide moves' sizes, relative to each coordinate's, as powers of the
#: input's epsilon (float64: 2^-36 to 2^-24), each times a fixed factor in
#: [1, 2) so that no two are in a power of 2 (whose rounding can alias alike)
WIDE = (0.7, 0.62, 0.54, 0.46)
_WIDE_FACTORS = np.random.default_rng(1).uniform(1.0, 2.0, len(WIDE))
#: ``near_floor``'s wide moves, in ulps of each coordinate along one direction
#: (whole numbers: the moved inputs are exact, and so the moves, as they must
#: be where a move is a few ulps; none a multiple of another's power of 2)
NEAR = (5, 17, 61, 233)
#: from this size a coordinate may vary on a unit's scale, which the widest moves
#: cross (``_uncurved``, ``holds_large``; ``largesteps.CEILING`` is this)
LARGE = 2.0 ** 10
#: the floor of the size steps scale with (``richardson.step_scale`` takes it from
#: here), and so the size a coordinate at 0 moves in proportion to, or the largest
#: input where that is smaller
ZERO_SIZE = 2.0 ** -6
#: the quantile of the output's magnitudes that stands for its scale
TYPICAL = 0.9
#: how many times its own size a coordinate's move may be (see ``_measured``)
SPAN = 2.0 ** 16
#: no floor above this many ulps of the output's scale (``TYPICAL``), times the
#: largest input (at least 1, at most ``SPAN``): more is no
#: rounding (a function that draws random numbers, a pole's curvature), and must
#: not widen tolerances
CAP_ULPS = 2.0 ** 10


def noise_floor(ev, in_idx: int) -> dict:
    """By output, the measured rounding noise of each real output coordinate
    when input ``in_idx`` moves (zeros where it cannot be measured), measured
    once per check (``ev.memo``)."""
    cache = ev.memo.setdefault("noise_floors", {})
    if in_idx not in cache:
        _kept_floors(ev, in_idx, _measured(ev, in_idx))
    return cache[in_idx]


def unit_rounding(ev, in_idx: int, window: dict | None = None) -> dict | None:
    """By output (the coordinates of ``window``, ``{out_idx: (start, stop)}``,
    when given), the rounding the floor of input ``in_idx`` measured above its
    cap but within ``rounding_bound``, 0 elsewhere; ``None`` where there is
    none, or the floor is not measured yet (this measures nothing).

    The cap counts ulps of the output's own scale, but an output far below 1
    is often made from intermediates of the size of 1, whose rounding it
    carries in absolute terms: geoopt's ``logmap0`` writes ``artanh(r)`` as
    ``(log(1 + r) - log(1 - r)) / 2``, and at ``r = 1e-8`` its outputs of
    ``1e-8`` carry ``1 + r``'s rounding, ``1e-17`` to ``1e-16`` (1e8 ulps of
    themselves), the floor measured it and the cap left ``3e-21``. Such
    rounding is no widening of every estimate (``stairs.unit_noise`` takes it
    only where the widest step resolves the slope far above it)."""
    found = ev.memo.get("unit_roundings", {}).get(in_idx)
    if found is None:
        return None
    return found if window is None else {o: found[o][a:b] for o, (a, b) in window.items()}


def near_floor(ev, in_idx: int) -> dict:
    """By output, the floor measured with wide moves of a few to some hundred
    ulps (``NEAR``) in place of ``WIDE``'s: the rounding over steps far below
    the coordinate's size, where ``WIDE``'s moves, fractions of it, would
    cross structure of a fixed width (``largesteps``). Measured once per
    check, in an evaluation of its own."""
    cache = ev.memo.setdefault("near_floors", {})
    if in_idx not in cache:
        cache[in_idx] = _floors(ev, _measured(ev, in_idx, _near_moves(ev, in_idx)))
    return cache[in_idx]


def _near_moves(ev, in_idx: int) -> tuple:
    """``near_floor``'s wide moves and their multiples ``c_j`` (``NEAR``) of
    their direction: one ulp of each coordinate, of random sign (a
    coordinate at 0 does not move)."""
    p = ev.problem
    ulp = coords.spacing(coords.to_real(p.arrays[in_idx]), p.epsilon(in_idx=in_idx))
    direction = ulp * np.sign(kept(_direction, ulp.size))
    scales = np.array(NEAR, dtype=float)
    return scales, [c * direction for c in scales]


def riding_moves(ev, in_idx: int):
    """The moves (real rows: ``+m_1, -m_1, +m_2, ...``, added to the input)
    whose outputs give ``noise_floor(ev, in_idx)`` when it is not measured yet
    and the check's memory budget holds them all in one evaluation, to be
    evaluated with other points of the same input (a call costs far more than
    its points on small arrays); ``measured_from`` then takes their outputs.
    ``None``: known already, or measured by ``noise_floor`` alone."""
    if in_idx in ev.memo.get("noise_floors", {}) or \
            _pairs_in_budget(ev, in_idx) < MOVES + len(WIDE):
        return None
    return np.stack([x for move in _moves(ev, in_idx) + _wide_moves(ev, in_idx)
                     for x in (move, -move)])


def measured_from(ev, in_idx: int, outputs: dict) -> dict:
    """``noise_floor(ev, in_idx)`` from ``outputs`` (by output, real rows) at
    the input moved by each row of ``riding_moves``, kept as ``noise_floor``
    keeps it."""
    p = ev.problem
    second = {o: np.zeros(coords.to_real(p.out_arrays[o]).size) for o in p.float_out}
    scales = _wide_scales(ev, in_idx)
    for o in p.float_out:
        slopes = []
        _take(second[o], slopes, outputs[o].reshape(MOVES + len(WIDE), 2, -1), 0, scales,
              p.out_arrays[o])
        _slope_spread(second[o], slopes, scales, holds_large(ev, in_idx))
    return _kept_floors(ev, in_idx, second)


def _kept_floors(ev, in_idx: int, second: dict) -> dict:
    """The floors of ``second`` (``_floors``), kept as ``noise_floor(ev,
    in_idx)``, with what their cap took off within ``rounding_bound`` (kept
    as ``unit_rounding``'s, when there is any)."""
    floors = ev.memo.setdefault("noise_floors", {})[in_idx] = _floors(ev, second)
    unit = {}
    for o, floor in floors.items():
        beyond = second[o] > floor
        if beyond.any():
            bound = rounding_bound(ev, o)
            unit[o] = np.where(beyond & (second[o] <= bound), second[o], 0.0)
    if any(u.any() for u in unit.values()):
        ev.memo.setdefault("unit_roundings", {})[in_idx] = {
            o: unit[o] if o in unit else np.zeros_like(floor) for o, floor in floors.items()}
    return floors


def rounding_bound(ev, out_idx: int) -> float:
    """The most rounding an output coordinate may carry whatever its own
    size: ``CAP_ULPS`` ulps of 1, or of the largest input where that is larger
    (an output may be made from intermediates of that size)."""
    return CAP_ULPS * ev.problem.epsilon(out_idx=out_idx) * max(1.0, largest_input(ev))


def _moves(ev, in_idx: int) -> list:
    """The ``MOVES`` random moves of input ``in_idx`` (real coordinates)."""
    reach = MOVE_ULPS * ev.problem.epsilon(in_idx=in_idx) * _sizes(ev, in_idx)
    return [reach * draw for draw in kept(_draws, reach.size)]


def _sizes(ev, in_idx: int) -> np.ndarray:
    """The size each real coordinate of input ``in_idx`` moves in proportion to."""
    # the largest input's (inside the function a small input may be added to a
    # large one: logcumsumexp's backward adds the grad_output's logarithm to
    # inputs of 1e4, a staircase whose stairs smaller moves never cross), but at
    # most ``SPAN`` times the coordinate's own: abs's sample mixes 1e-30 and 1e30,
    # and its small coordinates must not cross zero
    size = np.abs(coords.to_real(ev.problem.arrays[in_idx]))
    moved = np.maximum(size, np.minimum(largest_input(ev), SPAN * size))
    # a coordinate at exactly 0 is differenced on the steps of one of ZERO_SIZE
    # (``richardson.step_scale``), so its rounding is measured on that scale: a
    # bias initialised to zeros moved by nothing, and the entries of a gradient
    # that cancel to nothing in exact arithmetic (attention's key bias) got no
    # floor and a numerical derivative of their rounding over the step, 6e-13
    # with an estimate of 2e-14, against AD's 1e-17
    return np.where(size == 0, min(ZERO_SIZE, largest_input(ev) or ZERO_SIZE), moved)


def _wide_scales(ev, in_idx: int) -> np.ndarray:
    """The wide moves' multiples ``c_j`` of their direction (``WIDE``)."""
    return ev.problem.epsilon(in_idx=in_idx) ** np.array(WIDE) * _WIDE_FACTORS


def _wide_moves(ev, in_idx: int) -> list:
    """The wide moves: ``c_j`` times one direction, each coordinate's size
    (``_sizes``) times a draw of ``_direction``."""
    direction = _sizes(ev, in_idx)
    direction *= kept(_direction, direction.size)
    return [c * direction for c in _wide_scales(ev, in_idx)]


def _direction(size: int) -> np.ndarray:
    """``size`` numbers of magnitude in [1/2, 1) and random sign, from seed 2
    (none near 0: a coordinate that hardly moves crosses no stair)."""
    rng = np.random.default_rng(2)
    return rng.uniform(0.5, 1.0, size) * rng.choice([-1.0, 1.0], size)


def _draws(size: int) -> np.ndarray:
    """``MOVES`` rows of ``size`` uniform numbers in [-1, 1) from seed 0."""
    rng = np.random.default_rng(0)
    return np.stack([rng.uniform(-1.0, 1.0, size) for _ in range(MOVES)])


def _measured(ev, in_idx: int, wide: tuple | None = None) -> dict:
    """By output, the rounding ``noise_floor`` measures (before ``_floors``
    caps it), or with the wide moves ``wide`` (their multiples of their
    direction and the moves) in place of ``WIDE``'s."""
    p = ev.problem
    base = p.arrays[in_idx]
    vector = coords.to_real(base)
    second = {o: np.zeros(coords.to_real(p.out_arrays[o]).size) for o in p.float_out}
    slopes = {o: [] for o in p.float_out}
    scales, wide_moves = wide or (_wide_scales(ev, in_idx), _wide_moves(ev, in_idx))
    curved = wide is None and holds_large(ev, in_idx)
    moves = _moves(ev, in_idx) + wide_moves
    at_once = _pairs_at_once(ev, in_idx)
    for start in range(0, len(moves), at_once):   # as many pairs at a time as the budget holds
        group = moves[start:start + at_once]
        rows = np.stack([x for move in group for x in (vector + move, vector - move)])
        arrays = coords.from_real_rows(rows, base.shape, base.dtype)
        outs = ev.outputs_at(in_idx, arrays, f"measuring the rounding noise of the outputs "
                             f"(input {in_idx})", tolerant=True)
        for o in p.float_out:
            _take(second[o], slopes[o], coords.to_real_rows(outs.pop(o)).reshape(
                len(group), 2, -1), start, scales, p.out_arrays[o])
    for o in p.float_out:
        _slope_spread(second[o], slopes[o], scales, curved)
    return second


def _take(second: np.ndarray, slopes: list, pairs: np.ndarray, start: int, scales,
          mid: np.ndarray) -> None:
    """Take the outputs ``pairs`` (real rows, shape (pairs, 2, size)) at the
    moves from the ``start``-th on (``_moves``, then ``_wide_moves``): the few
    ulps' into ``second`` (``_widest``), the wide ones' slopes into ``slopes``."""
    tiny = pairs[:max(0, MOVES - start)]
    if len(tiny):
        _widest(second, tiny, mid)
    for j, pair in enumerate(pairs[len(tiny):], start + len(tiny) - MOVES):
        with np.errstate(invalid="ignore", over="ignore"):
            slopes.append((pair[0] - pair[1]) / (2 * scales[j]))


def _slope_spread(second: np.ndarray, slopes: list, scales, curved: bool = False) -> None:
    """Raise ``second`` to each coordinate's largest ``|S_j - S_k| / (1/c_j +
    1/c_k)`` over the wide moves' ``slopes`` (``S_j`` over ``c_j``: ``scales``);
    a non-finite one counts 0. ``curved``: the curvature term ``b c**2`` the
    two widest moves show is taken out of every slope first (``_uncurved``)."""
    if curved:
        slopes = _uncurved(slopes, scales)
    for j in range(len(slopes)):
        for k in range(j + 1, len(slopes)):
            with np.errstate(invalid="ignore", over="ignore"):
                found = np.abs(slopes[j] - slopes[k])
                found /= 1 / scales[j] + 1 / scales[k]
            found[~np.isfinite(found)] = 0.0
            np.fmax(second, found, out=second)


def _uncurved(slopes: list, scales) -> list:
    """``slopes`` less ``b c_j**2``, ``b`` fitted to the two widest moves'.
    On an input of ``LARGE`` or more the widest moves reach 0.06 at 1e6 (2**-24
    of it), where ``sin``'s slope has bent by 6e-4: a floor of that would be
    the function's curvature, not its rounding, and widen the estimates of
    every column of the input (a compressed ``sin`` at 1e6 estimated its
    cells' error at 5e-7 of a cell, 6e-9 without it). Rounding, which moves a
    slope by about its noise over ``c``, shows at the narrower moves as
    before; what the two widest moves alone show of it is lost. Where either
    is not finite nothing is taken out."""
    order = np.argsort(scales)
    wide, wider = order[-2], order[-1]
    with np.errstate(invalid="ignore", over="ignore"):
        bend = (slopes[wider] - slopes[wide]) / (scales[wider] ** 2 - scales[wide] ** 2)
        bend[~np.isfinite(bend)] = 0.0
        return [s - bend * c ** 2 for s, c in zip(slopes, scales)]


def _widest(second: np.ndarray, pairs: np.ndarray, mid: np.ndarray) -> None:
    """Raise ``second`` to each coordinate's largest ``|f(x + m) + f(x - m) - 2 f(x)|``
    over ``pairs`` (real rows, shape (pairs, 2, size)); a non-finite one counts 0."""
    # (in place: a million outputs make each temporary 8 MB)
    with np.errstate(invalid="ignore", over="ignore"):
        found = pairs[:, 0] + pairs[:, 1]
        found -= 2 * coords.to_real(mid)
        np.abs(found, out=found)
    found[~np.isfinite(found)] = 0.0
    np.fmax(second, np.max(found, axis=0, initial=0.0), out=second)


def _floors(ev, second: dict) -> dict:
    """The floor of each output: its largest second differences, capped."""
    p = ev.problem
    factor = max(1.0, min(largest_input(ev), SPAN))
    floors = {}
    for o in p.float_out:
        mid = coords.to_real(p.out_arrays[o])
        finite = np.abs(mid[np.isfinite(mid)])
        unit = CAP_ULPS * p.epsilon(out_idx=o)
        if _below_cap(second[o], finite, unit * factor):
            floors[o] = second[o]   # (what the cap leaves: its quantile is slow to find)
            continue
        # a high quantile, not the largest: next to a pole (digamma at -4 in a
        # bfloat16 sample) a few values are huge, and their curvature is no noise
        typical = float(np.quantile(finite, TYPICAL)) if finite.size else 0.0
        cap = unit * typical * factor
        floors[o] = np.minimum(second[o], cap)
    return floors


def _below_cap(second: np.ndarray, finite: np.ndarray, unit: float) -> bool:
    """Whether every entry of ``second`` is surely at most ``unit`` times the
    ``TYPICAL`` quantile of ``finite`` (then the cap changes nothing), told by
    counting: the quantile lies between the sorted values at the two positions
    around ``TYPICAL * (n - 1)``, and it is at least a value ``need`` when
    fewer values than the lower position lie below ``need`` (one fewer, and a
    relative margin, for the rounding of the position and of the product)."""
    top = float(np.max(second, initial=0.0))
    if top == 0.0:
        return True
    need = top / unit * (1 + 1e-9)
    lower = int(np.floor(TYPICAL * (finite.size - 1))) - 1
    return bool(np.isfinite(need)) and lower >= 0 and \
        int(np.count_nonzero(finite < need)) <= lower


def _pairs_at_once(ev, in_idx: int) -> int:
    """How many pairs of moves one evaluation takes: as many as a share of the
    budget holds with their inputs and outputs (each pair two points; the
    points and their engine copy, the outputs and their stacked copy), at
    least one."""
    return int(max(1, min(MOVES + len(WIDE), _pairs_in_budget(ev, in_idx))))


def _pairs_in_budget(ev, in_idx: int) -> int:
    """How many pairs of moves a share of the budget holds (see ``_pairs_at_once``)."""
    p = ev.problem
    size = p.layout.in_size(in_idx) + sum(p.layout.out_size(o) for o in p.float_out)
    per_pair = 2 * max(1, size) * budgets.BYTES * 4
    return ev.budget // budgets.SHARE // per_pair


def holds_large(ev, in_idx: int) -> bool:
    """Whether input ``in_idx`` has a finite real coordinate of ``LARGE`` or
    more, read once per check and input (``ev.memo``: each output's floor and
    each chunk of a chunked plan's columns ask)."""
    found = ev.memo.setdefault("holds_large", {})
    if in_idx not in found:
        size = np.abs(coords.real_view(ev.problem.arrays[in_idx]))
        found[in_idx] = bool(np.any(np.isfinite(size) & (size >= LARGE)))
    return found[in_idx]


def largest_input(ev) -> float:
    """The largest finite magnitude among the check's floating inputs (0 if
    none), found once per check (``ev.memo``: every input's moves and floors
    ask)."""
    largest = ev.memo.get("largest_input")
    if largest is None:
        largest = ev.memo["largest_input"] = max(
            [coords.largest_finite(a) for a in ev.problem.arrays.values()
             if np.issubdtype(a.dtype, np.inexact)] + [0.0])
    return largest
