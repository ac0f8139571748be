"""Whether a second-order check's failures are rounding noise, not evidence.

A first derivative that is zero in exact arithmetic (corrcoef of one
variable is constant) comes out of the engine as rounding noise; its finite
differences, and the AD second derivative, are then noise too, and no
tolerance can judge the formula. Noise shows when the inputs move by a few
ulps: a smooth function's second difference over so small a move is
negligible, noise's is as large as the noise (``moved_evaluators``).
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.core.coords import largest_finite
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.sides import SIDES
from adcheck.gradcheck.errors import GradcheckError

_largest = largest_finite

#: how far (in units of the rounding of the inputs) ``moved_evaluators`` move them
MOVE_ULPS = 4
#: at how many moved points the rounding noise is measured (noise may repeat by chance)
MOVES = 3


def moved_evaluators(ev: Evaluator) -> list:
    """``MOVES`` pairs of ``Evaluator``s of the same function: its inputs that
    require grad moved by ``+s`` and by ``-s`` (``s`` up to ``MOVE_ULPS`` units
    of their rounding per coordinate, at random with a fixed seed). A smooth
    function's second difference over so small a move is negligible; rounding
    noise's is as large as the noise. A pair where it does not run is left out."""
    from adcheck.gradcheck.core.problem import Problem
    p, E = ev.problem, ev.problem.engine
    rng = np.random.default_rng(0)
    pairs = []
    for _ in range(MOVES):
        steps = {i: MOVE_ULPS * p.epsilon(in_idx=i) * rng.uniform(-1.0, 1.0, p.arrays[i].shape)
                 for i in p.diff_in}
        pair = []
        for sign in (1.0, -1.0):
            inputs = list(p.inputs)
            for i, step in steps.items():
                # independent moves: a common factor may leave a scale-invariant
                # computation's rounding unchanged (corrcoef)
                moved = (p.arrays[i] * (1 + sign * step)).astype(p.arrays[i].dtype)
                inputs[i] = E.from_numpy_like(moved, p.inputs[i], requires_grad=True)
            try:
                pair.append(Evaluator(Problem(p.source, tuple(inputs), p.name, order=p.order,
                                              warn_precision=False), ev.budget))
            except Exception:  # noqa: BLE001 - no evaluation there: no noise measured
                break
        if len(pair) == 2:
            pairs.append(tuple(pair))
    return pairs


def moved_vectors(vector: np.ndarray, epsilon: float, both: bool = False) -> np.ndarray:
    """``MOVES`` copies of ``vector``, each entry moved by up to ``MOVE_ULPS`` units
    of rounding (``epsilon``), at random with a fixed seed; with ``both``, each
    move followed by its opposite (``2 * MOVES`` copies)."""
    rng = np.random.default_rng(0)
    moves = MOVE_ULPS * epsilon * rng.uniform(-1.0, 1.0, size=(MOVES, *vector.shape))
    if both:
        moves = np.stack([moves, -moves], axis=1).reshape(2 * MOVES, *vector.shape)
    return (vector[None] * (1 + moves)).astype(vector.dtype)



#: the share of its size and of its first difference that a first derivative's second
#: difference over a move of a few ulps reaches only when it is rounding noise
NOISE_SHARE = 0.25
#: noise is at most this times sqrt(eps) times the largest input (or 1)
NOISE_SIZE = 1.0
#: a failure no larger than this times the products' measured noise is that noise
NOISE_ERROR = 4.0


def noise_only(ev: Evaluator, failures) -> str | None:
    """Why ``failures`` of a check of the function of ``ev`` (a first
    derivative) are no evidence, or ``None``. Its outputs, and its products of
    ones, are evaluated with the inputs (or the ones) moved by ``+s`` and
    ``-s``, a few ulps (``moved_evaluators``): where the second difference
    ``f(+s) + f(-s) - 2 f`` is ``NOISE_SHARE`` of ``f`` and of the first
    difference or more, ``f`` is rounding noise (a derivative that is zero in
    exact arithmetic, as corrcoef's of one variable). Each failed AD block is
    measured the same way (``_noisy_blocks``), since products of ones can be
    exactly zero where the block is not.

    When something is noise, a failure is excused if the output it compares is
    noise (its finite differences are noise over a step) or its block's steps
    straddle a jump (noise looks like one), unless it compares AD values that
    neither move like noise nor are as small as the products' noise (a stable
    error is an error, whatever the differences say); else if it is no larger
    than ``NOISE_ERROR`` times the products' noise or the rounding of a
    quantity zero in exact arithmetic (an ulp of the largest input per input
    coordinate), or than ``NOISE_ERROR`` times its own block's measured noise
    (a scaling failure on a block that is noise, whatever its size). A product
    of ones that is zero (``J 1 = 0`` for softmax, whose outputs do not change
    when every input moves alike) excuses no error larger than that."""
    moved = moved_evaluators(ev)
    noisy = _noisy(ev, moved)
    blocks = _noisy_blocks(ev, failures, moved)
    if not (noisy or blocks) or not failures:
        return None
    judge = _Judge(ev.problem, noisy, blocks, failures)
    if not all(judge.excused(f) for f in failures):
        return None
    return (f"{ev.problem.name}: {judge.reason(failures)}, so no finite difference or "
            "tolerance can judge the second-order formula here; check it at inputs where it "
            "is not")


class _Judge:
    """What excuses one failure of ``noise_only``, and the words for it."""

    def __init__(self, p, noisy: dict, blocks: dict, failures):
        self.p, self.noisy, self.blocks = p, noisy, blocks
        floats = [a for a in p.arrays.values() if np.issubdtype(a.dtype, np.inexact)]
        self.largest = max([_largest(np.abs(a)) for a in floats] + [1.0])
        # a quantity zero in exact arithmetic comes out as the rounding of the terms
        # that cancel in it: at most one ulp of the largest input per input coordinate
        # (logcumsumexp's second derivative at inputs of 1e4 works with x - out)
        rounding = _epsilon_of(p) * self.largest * sum(a.size for a in floats)
        self.products = max([max(second, rounding) for what, (_, second) in noisy.items()
                             if not what.startswith("output ")], default=0.0)
        # steps that straddle a jump are no evidence either way (noise looks like
        # one), nor is what the comparison of those blocks then says
        self.straddled = {(f.out_idx, f.in_idx) for f in failures
                          if f.check == "discontinuous"}

    def own(self, failure) -> float | None:
        """The second difference of the failure's AD block, where it is noise."""
        found = self.blocks.get((failure.mode.removeprefix("fast-"), failure.out_idx,
                                 failure.in_idx))
        return found and found[1]

    def unjudged(self, failure) -> bool:
        """Whether the failure's numerical side is no evidence."""
        return (failure.out_idx, failure.in_idx) in self.straddled \
            or f"output {failure.out_idx}" in self.noisy

    def excused(self, failure) -> bool:
        if self.unjudged(failure):
            # AD values that neither move like noise nor are as small as it are an
            # error all the same, whatever the differences say (a result without its
            # values, or of another check, is excused as before)
            if failure.check not in (*SIDES, "scaling") or failure.actual is None \
                    or self.own(failure):
                return True
            return _largest(np.abs(np.asarray(failure.actual))) <= NOISE_ERROR * self.products
        size = failure.max_error
        if size is None or not np.isfinite(size):
            return False
        if failure.check == "scaling" and self.own(failure):
            return True   # the products of a block that is noise are noise, however scaled
        return size <= NOISE_ERROR * max(self.products, self.own(failure) or 0.0)

    def reason(self, failures) -> str:
        what, (size, second) = next(iter(self.noisy.items())) if self.noisy else next(
            (f"the {mode} Jacobian's block (output {o}, input {i})", found)
            for (mode, o, i), found in self.blocks.items())
        reason = (f"{what} of {self.p.subject} is rounding noise at these inputs (largest "
                  f"{size:.1e}, second difference {second:.1e} over moves of the inputs or "
                  f"the vector by up to {MOVE_ULPS} ulps): it is zero in exact arithmetic or "
                  "lost to cancellation")
        judged = [f for f in failures if not self.unjudged(f)]
        if not judged:
            return reason
        worst, bound = max(f.max_error for f in judged), NOISE_ERROR * self.products
        return reason + f", and the failures (largest {worst:.1e}) are within the rounding of " + (
            f"such a quantity here ({bound:.1e}: an ulp of the largest input, "
            f"{self.largest:.1e}, per input coordinate)"
            if all(f.max_error <= bound for f in judged) else
            "the AD values they compare, whose blocks are noise too (measured the same way)")


def _noisy(ev: Evaluator, moved: list) -> dict:
    """By name, the outputs and products of ones of ``ev``'s function that are
    rounding noise: ``(largest size, second difference)``; ``moved`` are
    ``moved_evaluators(ev)``."""
    base, moved_grads = _values(ev, moved=True)
    pairs = [(_values(a)[0], _values(b)[0]) for a, b in moved]
    pairs += list(zip(moved_grads[0::2], moved_grads[1::2]))
    return _noise_among(base, pairs, _cap(ev.problem))


def _noisy_blocks(ev: Evaluator, failures, moved: list) -> dict:
    """By ``(mode, out_idx, in_idx)``, the failed blocks of an AD Jacobian of
    ``ev``'s function whose values, made again at the ``moved`` evaluators, are
    rounding noise: ``(largest size, second difference)``."""
    keys = {(f.mode.removeprefix("fast-"), f.out_idx, f.in_idx) for f in failures
            if f.check in (*SIDES, "scaling") and f.mode.removeprefix("fast-") in SIDES}
    found, cap = {}, _cap(ev.problem)
    for key in sorted(keys):
        try:
            base = {key: _ad_block(ev, *key)}
            pairs = [({key: _ad_block(a, *key)}, {key: _ad_block(b, *key)}) for a, b in moved]
        except GradcheckError:   # no AD values there: nothing measured
            continue
        found.update(_noise_among(base, pairs, cap))
    return found


def _ad_block(ev: Evaluator, mode: str, out_idx: int, in_idx: int) -> np.ndarray:
    """The real block ``(out_idx, in_idx)`` of ``ev``'s Jacobian by ``mode``: the
    products of every unit vector on the carrier (a failed block only: small)."""
    side, p = SIDES[mode], ev.problem
    carrier, receiver = (out_idx, in_idx) if side.carrier == "output" else (in_idx, out_idx)
    n = side.carrier_size(p.layout, carrier)
    products = side.products(ev, carrier, side.vectors(p, carrier, np.eye(n)),
                             "measuring the rounding of a failed block")
    return side.real_rows(p, receiver, products[receiver], n)


def _cap(p) -> float:
    """The largest rounding noise can be: small next to the values the function
    works on (a jump or a pole, clamp or atanh in float16 whose moves are wide,
    moves it by more)."""
    inputs = [a for a in p.arrays.values() if np.issubdtype(a.dtype, np.inexact)]
    return NOISE_SIZE * np.sqrt(_epsilon_of(p)) * max([_largest(np.abs(a)) for a in inputs]
                                                      + [1.0])


def _noise_among(base: dict, pairs: list, cap: float) -> dict:
    """The entries of ``base`` (by name) that are noise over the moved ``pairs``
    of dicts like it: their second difference is ``NOISE_SHARE`` of their size
    and first difference or more, and they are no larger than ``cap``."""
    noisy = {}
    for plus, minus in pairs:
        for what, mid in base.items():
            up, down = plus.get(what), minus.get(what)
            if up is None or down is None or not up.shape == down.shape == mid.shape:
                continue
            with np.errstate(invalid="ignore", over="ignore"):
                second = _largest(np.abs(up + down - 2 * mid))
                scale = max(_largest(np.abs(mid)), _largest(np.abs(up - down)) / 2)
            if 0 < second and second >= NOISE_SHARE * scale and _largest(np.abs(mid)) <= cap:
                size = _largest(np.abs(mid))
                noisy[what] = (size, max(second, noisy.get(what, (0.0, 0.0))[1]))
    return noisy


def _epsilon_of(problem) -> float:
    """Machine epsilon of the least precise float output (or input)."""
    return max([problem.epsilon(out_idx=o) for o in problem.float_out]
               + [problem.epsilon(in_idx=i) for i in problem.diff_in])



def _values(ev: Evaluator, moved: bool = False) -> tuple:
    """``(values, moved_products)``: by name, the outputs of ``ev``'s function and
    its products of ones (a vjp on each output that requires grad, a jvp on
    each input); with ``moved``, also ``2 * MOVES`` dicts of the same products
    of ones moved by ``+s`` and ``-s``."""
    p = ev.problem
    found = {f"output {o}": p.out_arrays[o] for o in p.float_out}
    moved_products = [{} for _ in range(2 * MOVES if moved else 0)]
    for side in SIDES.values():
        for idx in side.carriers(p):
            ones = np.ones_like(side.base(p, idx))
            vectors = ones[None]
            if moved:
                epsilon = (p.epsilon(out_idx=idx) if side.carrier == "output"
                           else p.epsilon(in_idx=idx))
                vectors = np.concatenate([vectors, moved_vectors(ones, epsilon, both=True)])
            try:
                products = side.products(ev, idx, vectors, "measuring rounding noise")
            except GradcheckError:
                continue
            for r, stacked in products.items():
                if stacked is None:
                    continue
                name = (f"the {side.product} of ones on {side.carrier} {idx} (for "
                        f"{side.receiver} {r})")
                found[name] = stacked[0]
                for k, into in enumerate(moved_products):
                    into[name] = stacked[k + 1]
    return found, moved_products

