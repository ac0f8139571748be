"""The quick pass's screen: a few evaluations that clear most special points.

A point of the quick tier (exact zeros, ties, three magnitudes) is first
screened: one AD product per mode the check asks for (a vjp with a random
cotangent ``v``; a jvp) and the two one-sided difference quotients of ``v .
f`` along a direction ``u`` with positive entries (a tie whose gradients add
up to 2 leaves the bracket of a direction that moves the tied entries
together). The formula's ``v . J u`` must be finite and lie between the
one-sided quotients (the bracket of ``brackets``, which holds at
kinks and ties too). A point that passes is counted as passed; one that does
not is judged in full (the precise check and the one-sided verdicts), so the
screen never fails a formula by itself: it only decides which points get the
full judgement. What it may miss is an error diluted in the projections (one
entry of many off by less than ``SCREEN_RTOL`` of the whole); the full
explore mode checks every entry.

The checks of one sample (``runner.checks.run_checks``: reverse, forward,
the reference check, of the same function at the same points) share their
screens inside ``sharing()``: the first check to screen a point draws the
directions and evaluates the point and its one-sided quotients; a later
check of another mode adds only its own product (the forward check its jvp
along the same ``u``), and one whose modes were all screened there (the
reference check's reverse and forward) evaluates nothing. Each check's
products are still compared, each by its own mode, with its own verdict.

On refengine the points of one search are screened together, in a few
vmapped calls (``batchscreens``); each point's ``Screen`` is the one made
here alone, and where the batch cannot be made the points are screened here
one by one.
"""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np

from adcheck.gradcheck.core.coords import from_real, to_real
from adcheck.gradcheck.core.problem import as_tuple
from adcheck.gradcheck.core.secondorder import Reshaped
from adcheck.gradcheck.explore.beside import fd_step
from adcheck.gradcheck.explore.moves import moved_at

#: the relative tolerance of a screened projection (a failing one goes to the full check)
SCREEN_RTOL = 1e-3


class Point:
    """The function at one point, called directly on the engine (no checked
    problem is built: the screen makes four calls, the least it can)."""

    def __init__(self, E, func, ins: list, explored: list, needs_grad: bool = False):
        self.E, self.func, self.ins = E, func, ins
        with E.enable_grad():
            outs = as_tuple(func(*ins))
        self.outs = {k: o for k, o in enumerate(outs)
                     if E.is_tensor(o) and E.is_differentiable_dtype(o)}
        self.base = {k: E.to_numpy(o) for k, o in self.outs.items()}
        self.arrays = {i: E.to_numpy(ins[i]) for i in explored}
        #: whether a moved point is evaluated with grad (said by the caller, as a
        #: second-order check's first derivative needs it, or found on the first move)
        self.needs_grad = needs_grad

    def vjp_row(self, v: dict) -> dict:
        """``v^T J`` in the real coordinates of each explored input."""
        E, keys = self.E, list(v)
        cotangents = [E.from_numpy_like(from_real(v[k], self.base[k].shape, self.base[k].dtype),
                                        self.outs[k]) for k in keys]
        grads = E.grad([self.outs[k] for k in keys], [self.ins[i] for i in self.arrays],
                       cotangents)
        return {i: np.zeros(to_real(a).size) if g is None else to_real(E.to_numpy(g))
                for (i, a), g in zip(self.arrays.items(), grads)}

    def jvp(self, u: dict) -> dict:
        """``J u`` in the real coordinates of each output."""
        E = self.E
        with E.dual_level():
            args = list(self.ins)
            for i, d in u.items():
                a = self.arrays[i]
                args[i] = E.make_dual(args[i], E.from_numpy_like(from_real(d, a.shape, a.dtype),
                                                                 args[i]))
            outs = as_tuple(self.func(*args))
            tangents = {k: E.tangent(outs[k]) for k in self.outs}
        return {k: None if t is None else to_real(E.to_numpy(t)) for k, t in tangents.items()}

    def moved(self, u: dict, step: float) -> dict | None:
        """The outputs at the point moved ``step`` along ``u``; None where the
        function raises there."""
        E = self.E
        if not self.needs_grad:
            try:
                with E.no_grad():
                    outs = as_tuple(self.func(*self._moved_inputs(u, step, False)))
                return {k: to_real(E.to_numpy(outs[k])) for k in self.outs}
            except Exception:    # noqa: BLE001 - judged by the call with grad below
                pass
        # a function that differentiates inside (gradgrad's first derivative) needs
        # grad and inputs that require it: without them it raised at every point.
        # Only the values are read here: no graph of them where the function can
        # leave it out (``secondorder.first_derivative``'s ``without_graph``)
        valued = getattr(self.func, "without_graph", self.func)
        try:
            with E.enable_grad():
                outs = as_tuple(valued(*self._moved_inputs(u, step, True)))
        except Exception:    # outside the domain beside the point: no quotient
            return None
        self.needs_grad = True
        return {k: to_real(E.to_numpy(outs[k])) for k in self.outs}

    def moved_each(self, u: dict, steps: tuple) -> list:
        """``moved`` at each of ``steps``: a first derivative's in one vmapped
        call where the engine can (``moves``), else one call each."""
        found = moved_at(self, u, steps)
        return found if found is not None else [self.moved(u, step) for step in steps]

    def moved_array(self, i: int, d: np.ndarray, step: float) -> np.ndarray:
        """Input ``i`` moved by ``step`` along ``d`` (``moved_array``)."""
        return moved_array(self.arrays[i], d, step)

    def _moved_inputs(self, u: dict, step: float, with_grad: bool) -> list:
        E, ins = self.E, list(self.ins)
        for i, d in u.items():
            x = self.ins[i]
            ins[i] = E.from_numpy_like(self.moved_array(i, d, step), x,
                                       requires_grad=with_grad and E.requires_grad(x))
        return ins


#: the screens of the points of one sample, inside ``sharing()``
_SHARED: ContextVar[dict | None] = ContextVar("adcheck_quick_screens", default=None)


@contextmanager
def sharing():
    """In the block, a point screened once is not evaluated again by another
    check of the same function (see the module docstring): for the checks of one
    pure computation, as ``gradcheck.core.reuse.shared`` is for its Jacobians."""
    token = _SHARED.set({})
    try:
        yield
    finally:
        _SHARED.reset(token)


def _shared_key(E, func, ins: list, explored: list, eps: float):
    """What makes two screens the same: the function, every input's bytes and the
    explored inputs; ``None`` (not shared) where an input is not a tensor."""
    if not all(E.is_tensor(x) for x in ins):
        return None
    arrays = [E.to_numpy(x) for x in ins]
    return (func, tuple(explored), eps,
            tuple((a.dtype.str, a.shape, a.tobytes()) for a in arrays))


def moved_array(a: np.ndarray, d: np.ndarray, step: float) -> np.ndarray:
    """``a`` moved by ``step`` along ``d`` (its real coordinates): the one
    expression of a moved point, batched or not (``moves``, ``batchscreens``)."""
    return a + step * from_real(d, a.shape, a.dtype)


def directions(point, keys: list, rng) -> tuple:
    """``(v, u)`` of a screen at ``point``, drawn from ``rng``: a cotangent per
    output of ``keys``, a direction with positive entries per explored input."""
    v = {k: rng.standard_normal(to_real(point.base[k]).size) for k in keys}
    u = {i: rng.uniform(0.5, 1.5, to_real(a).size) for i, a in point.arrays.items()}
    return v, u


def step_at(arrays: dict, eps: float) -> tuple:
    """``(peak, step)``: the largest explored entry and the screen's step there."""
    peak = max(float(np.max(np.abs(to_real(a)), initial=0.0)) for a in arrays.values())
    return peak, fd_step(peak, eps)


class Screen:
    """One point's screen: the point, the directions, the one-sided quotients, and
    each mode's ``v . J u`` once asked (or what computing it raised). ``point``
    is a ``Point`` or what stands for one in a batch (``batchscreens``), which
    also gives ``sides``, the quotients at both steps."""

    def __init__(self, point, v: dict, u: dict, eps: float, sides: list | None = None):
        self.point, self.v, self.u = point, v, u
        self.peak, self.step = step_at(point.arrays, eps)
        self.sides = sides if sides is not None else quotients(point, v, u,
                                                               (-self.step, self.step))
        self.scale = sum(float(np.abs(v[k]) @ np.abs(to_real(point.base[k]))) for k in v)
        self._formulas: dict = {}
        self._halves = None

    def formula(self, mode: str) -> float:
        """``v . J u`` by ``mode``; raises what computing it raised."""
        if mode not in self._formulas:
            try:
                self._formulas[mode] = (True, _formula(self.point, self.v, self.u, mode))
            except Exception as exc:  # noqa: BLE001 - raised again to each check asking
                self._formulas[mode] = (False, exc)
        done, value = self._formulas[mode]
        if not done:
            raise value
        return value

    def halves(self) -> list:
        """The one-sided quotients at half the step."""
        if self._halves is None:
            self._halves = quotients(self.point, self.v, self.u,
                                     (-self.step / 2, self.step / 2))
        return self._halves


def _formula(point, v: dict, u: dict, mode: str) -> float:
    """``v . J u`` by ``mode`` (reverse: a vjp; forward: a jvp)."""
    with np.errstate(all="ignore"):
        if mode == "reverse":
            rows = point.vjp_row(v)
            return sum(float(rows[i] @ u[i]) for i in u)
        t = point.jvp(u)
        return sum(0.0 if t[k] is None else float(v[k] @ t[k]) for k in v)


def quotients(point, v: dict, u: dict, steps: tuple) -> list:
    """The difference quotient of ``v . f`` at each of ``steps`` along ``u``
    (``None`` where the function raises there)."""
    return [quotient(point, v, outs, step)
            for outs, step in zip(point.moved_each(u, steps), steps)]


def quotient(point, v: dict, outs: dict | None, step: float):
    """The difference quotient of ``v . f`` from ``point`` to ``outs``, the
    outputs moved by ``step`` (``None`` where they are not)."""
    if outs is None:
        return None
    with np.errstate(all="ignore"):
        return sum(float(v[k] @ (outs[k] - to_real(point.base[k]))) for k in v) / step


def screen(E, func, ins: list, explored: list, modes, rng, eps: float,
           needs_grad: bool = False, screened: dict | None = None) -> str:
    """``"pass"``, ``"domain"`` (the forward is not finite there), ``"nondiff"``
    (the function jumps along the direction, or the formula is NaN where the
    one-sided quotients differ or do not form) or ``"judge"`` (the point needs
    the full judgement; see the module docstring); ``eps``: the rounding unit
    of the inputs' and outputs' dtypes; ``needs_grad``: ``func`` differentiates
    inside (a first derivative), so its moved points are evaluated with grad at
    once, not first tried without it, where it can only raise; ``screened``:
    the screens made ahead outside ``sharing()`` (``batchscreens``'), by key."""
    shared = _SHARED.get()
    memo = shared if shared is not None else screened
    # (screens made ahead outside a sharing are each taken once: none is held longer)
    key = _shared_key(E, func, ins, explored, eps) if shared is not None or memo else None
    found = None if key is None else memo.get(key) if shared is not None else memo.pop(key, None)
    if found is None:
        found = first_screen(E, func, ins, explored, rng, eps, needs_grad)
        if key is not None and shared is not None:
            shared[key] = found
    return found if isinstance(found, str) else _verdict(found, modes, eps)


def _memo(screened: dict | None) -> dict | None:
    shared = _SHARED.get()
    return shared if shared is not None else screened


def unscreened(E, func, points: list, explored: list, eps: float,
               screened: dict | None = None) -> list:
    """The indices of ``points`` (each the function's inputs) that no screen
    made in this sharing (or in ``screened``) covers yet."""
    memo = _memo(screened)
    if memo is None:
        return list(range(len(points)))
    return [j for j, ins in enumerate(points)
            if memo.get(_shared_key(E, func, ins, explored, eps)) is None]


def keep(E, func, ins: list, explored: list, eps: float, found,
         screened: dict | None = None) -> None:
    """Keep ``found`` (a ``Screen`` or its word) as the screen of ``func`` at
    ``ins``, for ``screen`` to find."""
    memo = _memo(screened)
    key = None if memo is None else _shared_key(E, func, ins, explored, eps)
    if key is not None:
        memo[key] = found


def first_screen(E, func, ins: list, explored: list, rng, eps: float, needs_grad: bool):
    """The point's ``Screen``, or its word whatever the modes: "domain", or
    "judge" (no output requires grad, or nothing is explored)."""
    try:
        point = Point(E, func, ins, explored, needs_grad)
    except Reshaped:     # a first derivative reused where it does not apply: the caller's
        raise
    except Exception:    # the forward raises: outside the domain
        return "domain"
    if not all(np.all(np.isfinite(b)) for b in point.base.values()):
        return "domain"
    keys = [k for k, o in point.outs.items() if E.requires_grad(o)]
    if not keys or not point.arrays:
        return "judge"
    v, u = directions(point, keys, rng)
    return Screen(point, v, u, eps)


def _verdict(screened: Screen, modes, eps: float) -> str:
    """The screen's word for a check of ``modes`` (see ``screen``)."""
    formulas = [screened.formula(m) for m in ("reverse", "forward") if m in modes]
    sides, peak, step, scale = screened.sides, screened.peak, screened.step, screened.scale
    bracketed = all(q is not None and np.isfinite(q) for q in sides)

    def tol(*values):
        reach = max(abs(x) for x in values)
        return SCREEN_RTOL * reach + 64 * eps * (scale + peak * reach) / step
    finite = all(np.isfinite(f) for f in formulas)
    if finite and not bracketed:
        return "pass"    # an edge of the domain or a pole beside it: no bracket to screen
    if finite and all(min(sides) - tol(*sides, f) <= f <= max(sides) + tol(*sides, f)
                      for f in formulas):
        return "pass"
    halves = screened.halves()
    if not finite and (not bracketed or any(h is None or not np.isfinite(h) for h in halves)):
        return "nondiff"    # NaN or inf with no finite quotients to weigh it against
    for q, half in zip(sides, halves):
        # a jump: the quotient grows like 1 / step (sign at 0, eigenvectors at a
        # repeated eigenvalue, atan2's first derivative at the origin): not
        # differentiable, whatever the formula says there, no full check needed
        if half is not None and abs(half) > 1.5 * abs(q) and abs(half - q) > tol(q, half):
            return "nondiff"
    if not finite:
        # NaN or inf: a failure only where the function is differentiable (as
        # ``brackets``): the sides, extrapolated from both steps, must agree
        ends = [2 * h - q for q, h in zip(sides, halves)]
        spread = sum(abs(h - q) for q, h in zip(sides, halves))
        return "nondiff" if abs(ends[1] - ends[0]) > spread + tol(*ends) else "judge"
    return "judge"
