"""Evaluations of a ``Problem`` in NumPy terms, one vector or many at a time.

``Evaluator`` offers what every Jacobian producer and check needs:

- one vector: ``evaluate`` (outputs with some inputs replaced), ``vjp``
  (gradients for grad_outputs), ``jvp`` (output tangents for tangents);
- many vectors, always as stacked arrays (a new first dimension, one entry
  per vector): ``outputs_at`` (outputs at many points of one input),
  ``vjps`` (many grad_outputs on one output), ``jvps`` (many tangents on one
  input). Each is one call through the engine's vmap when it can be; when the
  engine has no vmap, batching is off (``gradcheck.core.batching``), there is a
  single vector, or the batched call raises, it loops one vector at a time
  inside. A batched exception sends that kind ("function", "vjp", "jvp") to
  the loop for the rest of the check, and ``Problem.batching`` records why;
  the loop then reproduces any failure vector by vector, with its message.

``prefetch(kind, idx, vectors)`` asks for the vjps (``kind="vjp"``, ``idx`` an
output) or jvps (``"jvp"``, an input) of vectors a later check will need: the
next ``vjps``/``jvps`` call on that index computes them too, in a batch of
their own (never mixed with the vectors asked for, so a product is computed
the same way each time it is asked for: a vmapped product may round
differently in another batch, and the reentrancy check compares repeats), and
keeps the results; a later request for the same vectors (the same block, bit
for bit) is served from there, once. When that batch does not happen, nothing
is kept and the later
request computes them itself. Inside ``riding()`` they ride instead in the
batch of the first request on their index when there is room (one engine
call fewer), and inside ``riding(again=True)`` a repeat of that request
(the reentrancy check) carries the same riders again, so both runs are
batched alike and round alike. The cache is a part of its own
(``gradcheck.core.prefetch``), as is a first derivative's vmappable twin
(``gradcheck.core.twin``). Every evaluation is counted in ``Problem.counts``.
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.core import budget as budgets
from adcheck.gradcheck.core.batching import batching_enabled
from adcheck.gradcheck.errors import (INPLACE_WORDS, GradcheckError, known_fix,
                                      no_derivative_formula)
from adcheck.gradcheck.core.points import mapped_input, mapped_points
from adcheck.gradcheck.core.prefetch import Prefetch
from adcheck.gradcheck.core.problem import Problem, as_tuple
from adcheck.gradcheck.core.stacked import join, stack
from adcheck.gradcheck.core.twin import Twin

class Evaluator:
    """The evaluations of one ``Problem`` (see the module docstring)."""

    def __init__(self, problem: Problem, budget: int = budgets.DEFAULT_BUDGET,
                 origin: tuple | None = None):
        self.problem = problem
        #: what a kept expected Jacobian belongs to (``gradcheck.core.reuse``): the
        #: function as the user gave it and the order, or ``None`` (keep nothing)
        self.origin = origin
        #: measurements of the function at the given inputs, by name, made once per
        #: check by the rooms above (the noise floor of each input:
        #: ``gradcheck.numerics.noisefloor``)
        self.memo: dict = {}
        #: bytes the arrays of the check may hold: ``Options.memory_budget`` less
        #: what evaluations in flight hold beside them (``budget.for_arrays``)
        self.budget = budgets.for_arrays(budget, self.evaluation_bytes)
        self._unbatchable: set = set()
        self._batch_size = None
        #: products asked for ahead and kept for later checks (``prefetch``, ``riding``)
        self.prefetched = Prefetch()
        #: a first derivative's vmappable twin (``gradcheck.core.twin``), looked for
        #: the first time a batch of points needs it
        self.twin = Twin(problem)

    # ----- one vector -------------------------------------------------------
    def evaluate(self, overrides: dict, what: str = "computing finite differences",
                 values_only: bool = False) -> dict:
        """Outputs (NumPy, by ``out_idx``) with inputs replaced by ``overrides``,
        in the grad mode ``Problem.for_values`` chooses; ``values_only``: computed
        without their graph where the function can (``Problem.values_func``)."""
        p, E = self.problem, self.problem.engine
        sources = {i: overrides.get(i, a) for i, a in p.arrays.items()}
        outs = p.for_values(lambda grad: p.call(p.fresh_inputs(overrides, grad), what, sources,
                                                values_only))
        return {o: E.to_numpy(outs[o]) for o in p.float_out}

    def vjp(self, grad_outputs: dict, what: str = "computing a vjp") -> dict:
        """Gradients (NumPy, by ``in_idx``) for ``grad_outputs`` by ``out_idx``.

        Outputs not in ``grad_outputs`` get no gradient (undefined). A
        missing gradient is returned as ``None``.
        """
        p, E = self.problem, self.problem.engine
        keys = list(grad_outputs)
        gos = [p.like_output(o, np.asarray(grad_outputs[o], dtype=p.out_arrays[o].dtype))
               for o in keys]
        p.counts["vjp"] += 1
        before = [E.to_numpy(g) for g in gos]
        try:
            grads = E.grad([p.outputs[o] for o in keys], [p.inputs[i] for i in p.diff_in], gos)
        except Exception as exc:
            inplace = INPLACE_WORDS in str(exc)
            others = len(p.diff_out) > len(keys) and not inplace
            hint = (" (the other outputs' gradients are undefined here: a Function that calls "
                    "ctx.set_materialize_grads(False) receives None for them)") if others else ""
            fix = known_fix(exc, "check the backward formula runs for these shapes and dtypes")
            raise GradcheckError(
                f"{p.name}: the backward{p.of} raised {type(exc).__name__} ({exc}) while {what}"
                f"{hint}; {fix}") from (p.order == 2 and no_derivative_formula(exc) or exc)
        p.check_unchanged(p.inputs, p.arrays, f"the backward{p.of}", what)
        p.check_grad_outputs(keys, gos, before, what)
        return {i: None if g is None else p.check_shape(E.to_numpy(g), p.arrays[i].shape,
                                                        f"input {i}", "vjp")
                for i, g in zip(p.diff_in, grads)}

    def jvp(self, tangents: dict, what: str = "computing a jvp") -> dict:
        """Output tangents (NumPy, by ``out_idx``; ``None``: no tangent) for
        ``tangents`` by ``in_idx``."""
        p, E = self.problem, self.problem.engine
        p.counts["jvp"] += 1
        p.counts["function"] += 1
        try:
            with E.dual_level():
                args = p.fresh_inputs({})
                plain = list(args)
                for i, t in tangents.items():
                    args[i] = E.make_dual(args[i], p.like_input(
                        i, np.asarray(t, dtype=p.arrays[i].dtype)))
                outs = as_tuple(p.func(*args))
                result = {o: E.tangent(outs[o]) for o in p.float_out}
                result = {o: None if t is None else E.to_numpy(t) for o, t in result.items()}
            p.check_unchanged(plain, p.arrays, f"forward-mode AD{p.of}", what)
        except Exception as exc:
            raise GradcheckError(
                f"{p.name}: forward-mode AD{p.of} raised {type(exc).__name__} ({exc}) while "
                f"{what}; check the jvp formula, or pass check_forward_ad=False "
                "if the function has none") from (
                    p.order == 2 and no_derivative_formula(exc) or exc)
        return {o: p.check_shape(t, p.out_arrays[o].shape, f"output {o}", "jvp")
                for o, t in result.items()}

    # ----- many vectors, stacked ---------------------------------------------
    def outputs_at(self, in_idx: int, arrays: np.ndarray, what: str,
                   each: str | None = None, tolerant: bool = False) -> dict:
        """Outputs for each ``arrays[k]`` in place of input ``in_idx``: by
        ``out_idx``, shape ``(len(arrays), *output shape)``.

        ``what`` names the batch in messages, ``each`` one evaluation of the
        loop (default ``what``). ``tolerant``: an evaluation of the loop that
        raises gives NaN outputs instead of an error.
        """
        p = self.problem
        arrays = np.asarray(arrays)
        if len(arrays) == 0:
            return {o: np.zeros((0, *a.shape), a.dtype) for o, a in p.out_arrays.items()}
        size = self.batch_size("function")
        if len(arrays) > size:
            parts = [self.outputs_at(in_idx, arrays[a:b], what, each, tolerant)
                     for a, b in budgets.chunks(len(arrays), size)]
            return {o: np.concatenate([part[o] for part in parts]) for o in p.float_out}
        result = self._batched("function", what, len(arrays),
                               lambda: self._mapped_outputs(in_idx, arrays))
        if result is not None:
            p.counts["function"] += len(arrays)
            return result
        rows = [self._tolerant_evaluate(in_idx, a, each.format(k=k) if each else what, tolerant)
                for k, a in enumerate(arrays)]
        return {o: np.stack([row[o] for row in rows]) for o in p.float_out}

    def outputs_at_each(self, points: dict, each: dict, tolerant: bool = False) -> dict:
        """``outputs_at`` of each input's ``points[in_idx]`` (``each[in_idx]``
        names its evaluations), by input: one vmapped call for them all where
        the function differentiates inside and they fit in one batch
        (``gradcheck.core.points``), else one call per input."""
        p = self.problem
        total = self._together_size(points)
        if total and p.differentiates_inside:
            what = f"evaluating it at the points of inputs {', '.join(map(str, points))}"
            found = self._batched("function", what, total, lambda: mapped_points(p, points))
            if found is not None:
                p.counts["function"] += total
                return found
        return {i: self.outputs_at(i, arrays, each[i], each[i], tolerant)
                for i, arrays in points.items()}

    def _together_size(self, points: dict) -> int | None:
        """How many points ``points`` holds, where the inputs' points may be one
        call: two inputs or more, each with points, that fit in one batch."""
        total = sum(len(arrays) for arrays in points.values())
        if len(points) > 1 and all(len(arrays) for arrays in points.values()) and \
                total <= self.batch_size("function"):
            return total
        return None

    def shares_calls(self) -> bool:
        """Whether ``outputs_together`` may make its call: a function that
        differentiates inside, on an engine whose vmap maps it, batching on."""
        p = self.problem
        return p.differentiates_inside and p.engine.vmap_differentiates and \
            batching_enabled() and "function" not in self._unbatchable

    def outputs_together(self, points: dict) -> dict | None:
        """``outputs_at_each``'s one vmapped call, or ``None`` where it is not
        made (``outputs_at_each``'s conditions; an engine that cannot; a call
        that raises, which then leaves batching on: the caller's calls of one
        input each reproduce it, as they would have alone)."""
        p = self.problem
        total = self._together_size(points)
        if not total or not self.shares_calls():
            return None
        try:
            with p.engine.looped_ops() as looped:
                found = mapped_points(p, points)
        except Exception:  # noqa: BLE001 - the calls of one input each report it
            return None
        if found is None:
            return None
        _count_batched(p, looped)
        p.counts["function"] += total
        return found

    def vjps(self, out_idx: int, vectors: np.ndarray, what: str, each: str | None = None) -> dict:
        """Gradients for each grad_output ``vectors[k]`` on output ``out_idx``: by
        ``in_idx``, shape ``(len(vectors), *input shape)``, or ``None`` where no
        vector gives that input a gradient."""
        return self._products("vjp", out_idx, vectors, what, each)

    def jvps(self, in_idx: int, vectors: np.ndarray, what: str, each: str | None = None) -> dict:
        """Output tangents for each tangent ``vectors[k]`` on input ``in_idx``: by
        ``out_idx`` (every float output), shape ``(len(vectors), *output shape)``;
        an output without a tangent gets zeros."""
        return self._products("jvp", in_idx, vectors, what, each)

    def products(self, kind: str, idx: int, vectors: np.ndarray, what: str,
                 each: str | None = None) -> dict:
        """``vjps`` (``kind="vjp"``) or ``jvps`` (``"jvp"``)."""
        return self._products(kind, idx, vectors, what, each)

    def prefetch(self, kind: str, idx: int, vectors) -> np.ndarray:
        """Compute the ``kind`` products of ``vectors`` on ``idx`` when the next
        batch of that kind there is asked for (in a batch of their own), and
        keep them for a later request of the same vectors, in the same order.
        Returns the block as kept: asked for as it is, it is found at once."""
        block = self._cast(kind, idx, vectors)
        self.prefetched.ask(kind, idx, block)
        return block

    def riding(self, again: bool = False):
        """Within: vectors asked for ahead ride in the batch of the first request
        on their index; with ``again``, a request of the same size on an index
        whose first batch carried riders carries them again (their products are
        not kept twice). A batch made once with riders and once without could
        round differently, which the reentrancy check would call
        nondeterminism: wrap both of its runs."""
        return self.prefetched.riding(again)   # (its context manager, one layer less)

    def engine_batch(self, kind: str, idx: int, vectors: np.ndarray) -> dict:
        """The engine's own batched call (``batched_grad`` or vmap over a jvp) on
        ``vectors``, with no loop to fall back to: its exception propagates.
        Counted as one evaluation. For the checks of batching itself."""
        self.problem.counts[kind] += 1
        compute = self._batched_vjps if kind == "vjp" else self._batched_jvps
        return compute(idx, self._cast(kind, idx, vectors))

    # ----- inside -------------------------------------------------------------
    def _cast(self, kind: str, idx: int, vectors) -> np.ndarray:
        p = self.problem
        dtype = (p.out_arrays[idx] if kind == "vjp" else p.arrays[idx]).dtype
        if isinstance(vectors, list):   # (np.array stacks equal shapes, without np.stack's Python)
            return np.array(vectors, dtype=dtype)
        if type(vectors) is np.ndarray and vectors.dtype == dtype:
            return vectors   # (what asarray returns: the block itself, without its call)
        return np.asarray(vectors, dtype=dtype)

    def batch_size(self, kind: str) -> int:
        """Vectors per batched ``kind`` evaluation ("function", "vjp", "jvp")
        that the budget allows: each holds every input and output (and, in a
        function that differentiates inside, a copy of every input), and what
        one evaluation of the function allocates."""
        key = (self.budget, self.evaluation_bytes)
        if self._batch_size is None or self._batch_size[0] != key:
            # (asked before every batch; what it depends on is fixed for a check)
            self._batch_size = (key, budgets.batch_size(self.budget, self.problem.example_size,
                                                        extra_bytes=self.evaluation_bytes))
        return self._batch_size[1]

    def batch_bytes(self) -> int:
        """What one batch of ``batch_size`` vectors holds, as the budget counts it."""
        return budgets.batch_bytes(self.budget, self.problem.example_size,
                                   extra_bytes=self.evaluation_bytes)

    @property
    def evaluation_bytes(self) -> int:
        """What one evaluation of the function held at its peak (measured on the
        first; 0 where it cannot be)."""
        return getattr(self.problem, "evaluation_bytes", 0)

    def _products(self, kind, idx, vectors, what, each) -> dict:
        vectors = self._cast(kind, idx, vectors)
        size = self.batch_size(kind)
        if len(vectors) > size:
            parts = [(b - a, self._products(kind, idx, vectors[a:b], what, each))
                     for a, b in budgets.chunks(len(vectors), size)]
            return join(parts, lambda r, n: self._zeros(kind, n)(r))
        kept = self.prefetched.kept(kind, idx, vectors)
        if kept is not None:
            self.prefetched.unrecorded()
            return {r: None if s is None else np.array(s) for r, s in kept.items()}
        pending = self.prefetched.pending(kind, idx)
        riders = self.prefetched.riders(kind, idx, len(vectors), pending, size)
        if riders:
            whole = self._ridden(kind, idx, vectors, riders, bool(pending), what)
            if whole is not None:
                return whole
        # (the common case: one batched call makes every row, stacked as it is)
        whole = self._batched_stacked(kind, idx, vectors, what)
        if whole is None:  # the loop
            rows = [self._single(kind, idx, v, each.format(k=k) if each else what)
                    for k, v in enumerate(vectors)]
            zeros = self._zeros(kind, len(vectors))
            # no gradient at all stays None (an unused input); a jvp without tangent is zero
            whole = stack(rows, self._receivers(kind), zeros,
                          (lambda r: None) if kind == "vjp" else zeros)
        if pending:
            # a batch of their own: the rows asked for are then computed the same
            # way every time they are asked for (a vmapped product may round
            # differently with other companions, and reentrancy compares repeats)
            self._keep(kind, idx, pending,
                       self._batched_call(kind, idx, np.concatenate(pending), what, False), 0)
        return whole

    def _ridden(self, kind, idx, vectors, riders: list, keep: bool, what) -> dict | None:
        """The products of ``vectors`` stacked by receiver, from one batched call
        that also computes the blocks ``riders``' (kept when ``keep``); ``None``:
        the loop."""
        n = len(vectors)
        result = self._batched_call(kind, idx, np.concatenate([vectors, *riders]), what)
        if result is None:
            return None
        if keep:
            self._keep(kind, idx, riders, result, n)
        return self._shaped(kind, result, 0, n)

    def _keep(self, kind, idx, blocks: list, result: dict | None, start: int) -> None:
        """Keep each of ``blocks``' products, the rows from ``start`` on of a batched
        call's ``result`` (nothing when the loop made it: ``None``)."""
        for block in blocks if result is not None else ():
            self.prefetched.keep(kind, idx, block,
                                 self._shaped(kind, result, start, start + len(block)))
            start += len(block)

    def _shaped(self, kind, result: dict, a: int, b: int) -> dict:
        """Rows ``a:b`` of a batched call's products, by receiver: ``None`` for a
        vjp that gives an input no gradient, zeros for a jvp without tangent."""
        zeros = self._zeros(kind, b - a)
        return {r: (result[r][a:b] if result.get(r) is not None else
                    None if kind == "vjp" else zeros(r)) for r in self._receivers(kind)}

    def _batched_stacked(self, kind, idx, batch, what) -> dict | None:
        """The products of ``batch`` by receiver, stacked as ``stacked.stack`` makes
        them, from one batched call; ``None`` when the loop must do it."""
        result = self._batched_call(kind, idx, batch, what)
        return None if result is None else self._shaped(kind, result, 0, len(batch))

    def _batched_call(self, kind, idx, batch, what, record: bool = True) -> dict | None:
        """One batched call's stacked products by receiver (``None`` where a
        receiver gets none), counted; ``None`` when the loop must do it.
        ``record``: a batch of a first run inside ``riding`` that its repeat
        makes again (``gradcheck.core.repeat``)."""
        p = self.problem
        replayed = self.prefetched.replayed(kind, idx, batch)
        if replayed is not None:   # the repeat made (and counted) it already
            return replayed
        supported = (p.engine.supports_batched_grad if kind == "vjp"
                     else p.engine.supports_batched_forward_grad)
        if not supported:
            if record:
                self.prefetched.record(kind, idx, batch, None, what)
            return None
        compute = self._batched_vjps if kind == "vjp" else self._batched_jvps

        def shaped():
            # a batch of the wrong shape may be the batching's fault, not the
            # formula's (torch's legacy vmap adds a dimension to matmul's jvp of a
            # 1-D input): the loop then checks each product's shape on its own
            result = compute(idx, batch)
            for r, stacked in (result or {}).items():
                if stacked is not None:
                    p.check_shape(stacked[0], self._receiver_shape(kind, r),
                                  f"{'input' if kind == 'vjp' else 'output'} {r}", kind)
            return result
        result = self._batched(kind, what, len(batch), shaped)
        if record:
            self.prefetched.record(kind, idx, batch, result, what)
        if result is None:
            return None
        p.counts[kind] += len(batch)
        if kind == "jvp":
            p.counts["function"] += len(batch)
        return result

    def _single(self, kind, idx, vector, what) -> dict:
        if kind == "vjp":
            return self.vjp({idx: vector}, what)
        return self.jvp({idx: vector}, what)

    def _receivers(self, kind) -> list:
        return self.problem.diff_in if kind == "vjp" else self.problem.float_out

    def _receiver_shape(self, kind, r) -> tuple:
        p = self.problem
        return (p.arrays[r] if kind == "vjp" else p.out_arrays[r]).shape

    def _zeros(self, kind, n):
        """A maker of ``n`` stacked zeros in the shape and dtype of receiver ``r``."""
        p = self.problem
        arrays = p.arrays if kind == "vjp" else p.out_arrays
        return lambda r: np.zeros((n, *arrays[r].shape), arrays[r].dtype)

    def _tolerant_evaluate(self, in_idx, array, what, tolerant) -> dict:
        try:
            return self.evaluate({in_idx: array}, what)
        except GradcheckError as exc:
            if not tolerant:
                raise
            # (the first: a check left with NaN differences says what the function raised)
            if self.problem.raised_nearby is None:
                cause = exc.__cause__ or exc
                words = " ".join(str(cause).split())
                if len(words) > 200:   # (cut at a word: "but found inv" read as a word)
                    words = words[:200].rsplit(" ", 1)[0] + " ..."
                self.problem.raised_nearby = f"{type(cause).__name__} ({words})"
            # every real coordinate NaN: a step that left the domain is discarded
            return {o: np.full(a.shape, complex(np.nan, np.nan) if np.iscomplexobj(a) else np.nan,
                               a.dtype) for o, a in self.problem.out_arrays.items()}

    def _batched(self, kind: str, what: str, size: int, compute):
        """Run ``compute()``, a batched evaluation of ``kind``; on any exception
        remember why, stop batching that kind, and return ``None`` (the loop
        then reports a failure exactly as it would without batching)."""
        p = self.problem
        if not batching_enabled() or size <= 1 or kind in self._unbatchable:
            return None     # (one vector: a plain call is cheaper than a batch of one)
        try:
            with p.engine.looped_ops() as looped:
                result = compute()
        except Exception as exc:  # the loop reproduces and reports it per vector
            self._unbatchable.add(kind)
            if p.batching["fallback"] is None:
                p.batching["fallback"] = (
                    f"{what} under vmap raised {type(exc).__name__} ({str(exc)[:200]}); "
                    f"every {kind} evaluation ran one vector at a time")
            return None
        if result is None:
            return None
        _count_batched(p, looped)
        return result

    def _mapped_outputs(self, in_idx: int, arrays: np.ndarray) -> dict | None:
        """Outputs for each ``arrays[k]`` in place of input ``in_idx`` in one
        vmapped call (``None``: the engine has no vmap)."""
        p = self.problem
        if p.differentiates_inside and not p.engine.vmap_differentiates:
            return self.twin.outputs_at(in_idx, arrays)
        # (a batch raising under no_grad goes to the loop, whose calls ask why)
        return p.for_values(lambda grad: mapped_input(p, in_idx, arrays, grad), probe=False)

    def _batched_vjps(self, out_idx: int, grad_outputs: np.ndarray) -> dict:
        p, E = self.problem, self.problem.engine
        gos = [p.like_output(out_idx, grad_outputs)]
        before = [E.to_numpy(gos[0])]
        grads = E.batched_grad([p.outputs[out_idx]], [p.inputs[i] for i in p.diff_in], gos)
        p.check_unchanged(p.inputs, p.arrays, f"the backward{p.of}", "computing batched vjps")
        p.check_grad_outputs([out_idx], gos, before, "computing batched vjps", batched=True)
        return {i: None if g is None else E.to_numpy(g) for i, g in zip(p.diff_in, grads)}

    def _batched_jvps(self, in_idx: int, tangents: np.ndarray) -> dict:
        p, E = self.problem, self.problem.engine
        args = p.fresh_inputs({})
        outs = as_tuple(E.batched_jvp(p.func, args, in_idx, p.like_input(in_idx, tangents)))
        p.check_unchanged(args, p.arrays, f"forward-mode AD{p.of}", "computing batched jvps")
        return {o: E.to_numpy(outs[o]) for o in p.float_out}


def _count_batched(p, looped: dict) -> None:
    """Count one batched call in ``p.batching``, and the ops it ran in a loop."""
    p.batching["batched_calls"] += 1
    for name, count in looped.items():
        p.batching["looped_ops"][name] = p.batching["looped_ops"].get(name, 0) + count
