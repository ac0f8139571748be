"""The quick pass's screens of all a search's points in one batch, where the engine can.

A screen (``quick``) evaluates the function at its point (with its graph),
at the point moved both ways along ``u``, and its products there (a vjp, a
jvp): four or five calls per point, and the quick pass screens about six
points per check. On refengine a call's dispatch costs as much as the
arithmetic of many small examples, so the points of one search are screened
together: one vmapped call evaluates every point with its graph, one every
moved point, one backward through the first gives every point's vjp, and
one vmapped call in a dual level every jvp (each product only once a check
asks for its mode). What it saves in ``adcheck ops``: bench/ops_sweep.md.

Each point's screen is the one ``quick`` makes alone: its directions drawn
from the same generator in the same order (a point outside the domain draws
none), its moved points built by the same arithmetic (``quick.moved_array``),
its quotients and verdict computed by the same code (``quick.Screen``). The
values are each example's own NumPy arithmetic; a batched kernel may round
otherwise in the last digits (a matrix product's backward), far inside the
screen's tolerance of 1e-3 of the projection.

Where the batch is not made (another engine, whose batched kernels round
otherwise; batching off; an input laid out unlike a new tensor; every
point's evaluation at once beyond the check's memory budget, or an
evaluation never measured) or its first call raises (a point outside the
domain raises there, an op has no batching rule, the outputs' shapes depend
on the values), ``screens`` returns ``None`` and the points are screened one
by one as before, which then says which one raises. A later call of the
batch that raises (the moves, a product) falls back to the point's own calls
for that part alone (``_Member.point``).
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.core import measured
from adcheck.gradcheck.core.batching import batching_enabled
from adcheck.gradcheck.core.budget import DEFAULT_BUDGET, batch_size
from adcheck.gradcheck.core.coords import from_real, to_real
from adcheck.gradcheck.core.problem import as_tuple
from adcheck.gradcheck.explore import quick
from adcheck.gradcheck.explore.moves import BATCHED_ENGINES


def screens(E, func, points: list, explored: list, rng, eps: float, needs_grad: bool = False,
            budget: int = DEFAULT_BUDGET) -> list | None:
    """What ``quick.first_screen`` makes at each of ``points`` (each a list of
    ``func``'s inputs, differing only in tensors of the same shapes): a
    ``quick.Screen``, ``"domain"`` or ``"judge"``; ``None`` where the batch is
    not made (see the module docstring). ``needs_grad``: ``func``
    differentiates inside (a first derivative); ``budget``: the bytes the
    check may hold (``memory_budget``), which every point's evaluation at once
    must keep to, as the check's own batches do."""
    if len(points) < 2 or not batchable(E) or not fits(E, func, points[0], len(points), budget):
        return None
    batch = _Batch(E, func, points, explored, needs_grad)
    if not batch.evaluate():
        return None
    found = []
    for member in batch.members:
        word = member.word(batch.keys)
        if word == "alone":   # (in its turn: its directions are drawn where they would be)
            found.append(quick.first_screen(E, func, points[member.index], explored, rng,
                                             eps, needs_grad))
            continue
        if word is None:
            member.v, member.u = quick.directions(member, batch.keys, rng)
        found.append(word or member)
    sides = iter(batch.sides([m for m in found if isinstance(m, _Member)], eps))
    return [quick.Screen(m, m.v, m.u, eps, sides=next(sides)) if isinstance(m, _Member) else m
            for m in found]


def fits(E, func, args: list, count: int, budget: int) -> bool:
    """Whether what a batch of ``count`` points holds at its peak, every
    point's evaluation with its graph and both moves of every point, is a
    batch the check's ``budget`` allows (``budget.batch_size``) for ``func``
    at ``args``; what one evaluation allocates must have been measured
    (``measured``: a function's temporaries can be many times its inputs, a
    convolution's unfolded image)."""
    held = measured.known_bytes(func, tuple(args), E)
    if held is None:
        return False
    size = sum(a.size * (2 if np.iscomplexobj(a) else 1)
               for a in (E.to_numpy(x, copy=False) for x in args if E.is_tensor(x)))
    return 3 * count <= batch_size(budget, size, extra_bytes=held)


def batchable(E) -> bool:
    """Whether ``screens`` batches the points of functions on engine ``E``."""
    return E.name in BATCHED_ENGINES and E.vmap_differentiates and batching_enabled()


class _Batch:
    """The points of one search, evaluated together (see the module docstring)."""

    def __init__(self, E, func, points: list, explored: list, needs_grad: bool):
        self.E, self.func, self.points = E, func, points
        self.explored, self.needs_grad = explored, needs_grad
        first = points[0]
        # stacked: every explored input (each point needs its own gradient), every
        # tensor some point replaces, and where the function differentiates inside
        # every tensor (or the gradients of the examples would be summed)
        self.stacked = [i for i, x in enumerate(first) if E.is_tensor(x) and (
            needs_grad or i in explored or any(p[i] is not x for p in points))]
        self.members: list = []
        self.keys: list = []
        self._products: dict = {}

    def _stack(self, arrays: dict, grad: bool) -> tuple:
        """The call's arguments and ``in_dims``: the arrays of ``arrays`` (by
        input) stacked as new tensors, every other input as the first point has it."""
        E, first = self.E, self.points[0]
        args, dims = list(first), [None] * len(first)
        for i, stack in arrays.items():
            x = first[i]
            # (a new stack, read by nothing else: shared, not copied)
            args[i] = E.from_numpy(stack, requires_grad=grad and E.requires_grad(x),
                                   dtype=x.dtype, copy=False)
            dims[i] = 0
        return args, tuple(dims)

    def _call(self, func, args, dims) -> tuple:
        mapped = self.E.vmap(func, dims)
        if mapped is None:
            raise NotImplementedError("no vmap")
        return as_tuple(mapped(*args))

    def evaluate(self) -> bool:
        """Every point evaluated with its graph in one call; whether it was."""
        E, points, n = self.E, self.points, len(self.points)
        if not all(E.plain_layout(points[0][i]) for i in self.stacked) or any(
                len(p) != len(points[0]) for p in points):
            return False
        arrays = {i: np.stack([E.to_numpy(p[i]) for p in points]) for i in self.stacked}
        self.args, self.dims = self._stack(arrays, grad=True)
        try:
            with E.enable_grad():
                outs = self._call(self.func, self.args, self.dims)
        except Exception:    # noqa: BLE001 - the points one by one say where and why
            return False
        self.outs = {k: o for k, o in enumerate(outs)
                     if E.is_tensor(o) and E.is_differentiable_dtype(o)}
        self.base = base = {k: E.to_numpy(o) for k, o in self.outs.items()}
        if any(b.shape[:1] != (n,) for b in base.values()):
            return False
        self.keys = [k for k, o in self.outs.items() if E.requires_grad(o)]
        self.members = [_Member(self, j, {k: b[j] for k, b in base.items()},
                                {i: np.array(arrays[i][j]) for i in self.explored})
                        for j in range(n)]
        return True

    def sides(self, drawn: list, eps: float) -> list:
        """For each member of ``drawn``, the quotients at both its steps."""
        if not drawn:
            return []
        steps = [(-s, s) for s in (quick.step_at(m.arrays, eps)[1] for m in drawn)]
        moved = self._moved(drawn, steps) or [None] * len(drawn)
        # (where the batch's are not finite, or it raised: the point's own calls, which
        # say which step raises, and whether it is the batch that made NaN)
        return [[quick.quotient(m, m.v, outs, step) for outs, step in zip(found, pair)]
                if found is not None and all(_finite(o) for o in found)
                else quick.quotients(m.point(), m.v, m.u, pair)
                for m, pair, found in zip(drawn, steps, moved)]

    def _moved(self, drawn: list, steps: list) -> list | None:
        """The outputs at each member's two moved points, from one call."""
        E = self.E
        arrays = {}
        for i in self.stacked:
            if i in self.explored:
                arrays[i] = np.stack([quick.moved_array(m.arrays[i], m.u[i], h)
                                      for m, pair in zip(drawn, steps) for h in pair])
            else:
                arrays[i] = np.stack([E.to_numpy(self.points[m.index][i])
                                      for m in drawn for _ in range(2)])
        grad = self.needs_grad
        args, dims = self._stack(arrays, grad=grad)
        # a first derivative's values alone, without their graph (``quick.Point.moved``)
        func = getattr(self.func, "without_graph", self.func) if grad else self.func
        try:
            with E.enable_grad() if grad else E.no_grad():
                outs = self._call(func, args, dims)
            stacked = {k: E.to_numpy(outs[k]) for k in self.outs}
        except Exception:    # noqa: BLE001 - the points' own calls say which step raises
            return None
        if any(a.shape[:1] != (2 * len(drawn),) for a in stacked.values()):
            return None
        return [[{k: to_real(a[2 * j + s]) for k, a in stacked.items()} for s in (0, 1)]
                for j in range(len(drawn))]

    def product(self, mode: str, index: int):
        """Member ``index``'s vjp rows (reverse) or jvp (forward), from one batched
        product of every member; ``None`` where that product raised."""
        if mode not in self._products:
            try:
                self._products[mode] = self._vjps() if mode == "reverse" else self._jvps()
            except Exception:    # noqa: BLE001 - each point's own call raises it again
                self._products[mode] = None
        made = self._products[mode]
        return None if made is None else made[index]

    def _vjps(self) -> list:
        """Every member's ``v^T J``: one backward through the first call's graph,
        each example with its member's cotangent (zero where it drew none)."""
        E, members = self.E, self.members
        cotangents = [E.from_numpy(self._drawn(self.base[k], "v", k), dtype=self.outs[k].dtype,
                                   copy=False) for k in self.keys]
        grads = E.grad([self.outs[k] for k in self.keys], [self.args[i] for i in self.explored],
                       cotangents)
        arrays = [None if g is None else E.to_numpy(g) for g in grads]
        return [{i: np.zeros(to_real(m.arrays[i]).size) if g is None else to_real(g[j])
                 for i, g in zip(self.explored, arrays)} for j, m in enumerate(members)]

    def _jvps(self) -> list:
        """Every member's ``J u``: one vmapped call in a dual level, each example
        with its member's direction (zero where it drew none)."""
        E, members = self.E, self.members
        with E.dual_level():
            args = list(self.args)
            for i in self.explored:
                tangent = self._drawn(E.to_numpy(args[i], copy=False), "u", i)
                args[i] = E.make_dual(args[i], E.from_numpy(tangent, dtype=args[i].dtype,
                                                            copy=False))
            outs = self._call(self.func, args, self.dims)
            tangents = {k: E.tangent(outs[k]) for k in self.outs}
            arrays = {k: None if t is None else E.to_numpy(t) for k, t in tangents.items()}
        return [{k: None if a is None else to_real(a[j]) for k, a in arrays.items()}
                for j in range(len(members))]


    def _drawn(self, like: np.ndarray, name: str, key) -> np.ndarray:
        """Each member's drawn ``v`` or ``u`` (``name``) for ``key``, stacked in
        the shape and dtype of ``like``; zero where a member drew none."""
        out = np.zeros_like(like)
        for j, m in enumerate(self.members):
            drawn = getattr(m, name)
            if drawn is not None:
                out[j] = from_real(drawn[key], out.shape[1:], out.dtype)
        return out


class _Member:
    """One point of a batch, standing for ``quick.Point`` in its ``Screen``:
    its outputs and explored inputs, its products from the batch's, and the
    point's own calls where the batch's raise (``point``)."""

    def __init__(self, batch: _Batch, index: int, base: dict, arrays: dict):
        self.batch, self.index, self.base, self.arrays = batch, index, base, arrays
        self.v = self.u = None
        self._point = None

    def word(self, keys: list) -> str | None:
        """``"judge"`` where ``quick.first_screen`` would say so, ``"alone"``
        where the batch's outputs are not finite (the point's own call says
        whether it is outside the domain), else ``None``."""
        if not _finite(self.base):
            return "alone"
        return "judge" if not keys or not self.arrays else None

    def point(self) -> quick.Point:
        """The point's own ``quick.Point`` (its calls made one by one)."""
        if self._point is None:
            b = self.batch
            self._point = quick.Point(b.E, b.func, b.points[self.index], b.explored,
                                      b.needs_grad)
        return self._point

    # (a product the batch made that is not finite is made again by the point's own
    # call: a batching rule may take another branch at a special point, refengine's
    # det takes the SVD's for every example, whose second derivative at a zero
    # matrix is NaN where the point's own is 0)
    def vjp_row(self, v: dict) -> dict:
        rows = self.batch.product("reverse", self.index) if v is self.v else None
        return rows if _finite(rows) else self.point().vjp_row(v)

    def jvp(self, u: dict) -> dict:
        tangents = self.batch.product("forward", self.index) if u is self.u else None
        return tangents if _finite(tangents) else self.point().jvp(u)

    def moved_each(self, u: dict, steps: tuple) -> list:
        return self.point().moved_each(u, steps)


def _finite(arrays: dict | None) -> bool:
    """Whether ``arrays`` (by output or input; ``None`` entries: no product)
    were made and are all finite."""
    return arrays is not None and all(a is None or np.all(np.isfinite(a))
                                      for a in arrays.values())
