"""A function and its inputs, prepared for checking, with evaluation counts.

``Problem`` validates the inputs, runs the function once with grad enabled
(the graph every vjp reuses), and offers the three primitive evaluations all
Jacobian builders need, in NumPy terms: ``evaluate`` (outputs at perturbed
inputs), ``vjp`` and ``jvp``. It counts each one.
"""
from __future__ import annotations

import warnings

import numpy as np

from gradcheck.engines import Engine, engine_for
from gradcheck.errors import GradcheckError
from gradcheck.jacobian import Layout


def function_name(func) -> str:
    """A readable name: ``MyFn`` for ``MyFn.apply``, else ``__name__``."""
    owner = getattr(func, "__self__", None)
    if isinstance(owner, type):
        return owner.__name__
    return getattr(func, "__name__", type(func).__name__)


def as_tuple(value) -> tuple:
    """A function's result or inputs as a tuple (a list counts as a sequence)."""
    if isinstance(value, (tuple, list)):
        return tuple(value)
    return (value,)


class Problem:
    """``func`` at ``inputs``: validated, evaluated once, ready for checks."""

    def __init__(self, func, inputs, name: str | None = None, engine: Engine | None = None,
                 differentiates_inside: bool = False):
        self.func = func
        #: the function calls autograd itself (a first derivative): evaluate it on
        #: leaves that require grad, with grad enabled; otherwise under no_grad
        self.differentiates_inside = differentiates_inside
        self.inputs = as_tuple(inputs)
        self.name = name or function_name(func)
        self.engine = engine or engine_for(self.inputs)
        self.func = self.engine.wrap_function(func)
        self.counts = {"function": 0, "vjp": 0, "jvp": 0}
        #: how the Jacobians were built: batched calls made, the reason the
        #: loop was used instead (if it was), ops that looped inside vmap
        self.batching = {"batched_calls": 0, "fallback": None, "looped_ops": {}}
        self._unbatchable: set = set()
        #: vectors other checks want a vjp (by out_idx) or jvp (by in_idx) of:
        #: the Jacobian builders add them to their batch, so they cost no
        #: call of their own; results land in ``extra_results`` by key
        self.extra = {"vjp": {}, "jvp": {}}
        self.extra_results: dict = {}
        self._validate_inputs()
        self.arrays = {i: self.engine.to_numpy(x) for i, x in enumerate(self.inputs)
                       if self.engine.is_tensor(x)}
        with self.engine.enable_grad():
            self.outputs = self.call(self.inputs, "evaluating it at the given inputs")
        self._classify_outputs()
        self.layout = Layout(
            {i: self.arrays[i].shape for i in self.diff_in},
            {i: np.iscomplexobj(self.arrays[i]) for i in self.diff_in},
            {o: self.out_arrays[o].shape for o in self.float_out},
            {o: np.iscomplexobj(self.out_arrays[o]) for o in self.float_out})

    def _validate_inputs(self):
        E = self.engine
        self.diff_in = [i for i, x in enumerate(self.inputs) if E.is_tensor(x) and E.requires_grad(x)]
        for i, x in enumerate(self.inputs):
            if isinstance(x, np.ndarray):
                raise ValueError(
                    f"{self.name}: input {i} is a NumPy array; gradcheck needs {E.name} tensors: "
                    f"convert it with {E.convert_hint} to check it")
        for i in self.diff_in:
            if not E.is_differentiable_dtype(self.inputs[i]):
                raise ValueError(
                    f"{self.name}: input {i} requires grad but has dtype {self.inputs[i].dtype}; "
                    "only floating point and complex inputs can be differentiated: "
                    "convert it with .double() (or pass it without requires_grad)")
        if not self.diff_in:
            integers = [f"input {i} has dtype {x.dtype}" for i, x in enumerate(self.inputs)
                        if E.is_tensor(x) and not E.is_differentiable_dtype(x)]
            hint = ("; " + ", ".join(integers) + ", and integer tensors cannot require grad: "
                    "convert them with .double() first") if integers else ""
            raise ValueError(
                f"{self.name}: no input requires grad, so there is nothing to check; "
                f"{E.requires_grad_hint}{hint}")
        for i in self.diff_in:
            dtype = str(self.inputs[i].dtype)
            if not ("float64" in dtype or "complex128" in dtype):
                warnings.warn(
                    f"{self.name}: input {i} requires grad and has dtype {dtype}, not double "
                    "precision; finite differences at eps=1e-6 will likely fail. "
                    "Use float64 or complex128 inputs.", UserWarning, stacklevel=4)

    def _classify_outputs(self):
        E = self.engine
        self.out_arrays = {}
        self.float_out, self.diff_out = [], []
        for o, out in enumerate(self.outputs):
            if not E.is_tensor(out) or not E.is_differentiable_dtype(out):
                continue
            self.out_arrays[o] = E.to_numpy(out)
            self.float_out.append(o)
            if E.requires_grad(out):
                self.diff_out.append(o)

    def call(self, args, what: str) -> tuple:
        """Run the function on ``args``; wrap any exception it raises."""
        self.counts["function"] += 1
        try:
            return as_tuple(self.func(*args))
        except GradcheckError:
            raise
        except Exception as exc:  # the user's function: name it and what we did
            raise GradcheckError(
                f"{self.name}: the function raised {type(exc).__name__} ({exc}) while "
                f"{what}; make it run on {self.engine.name} tensors of these shapes and "
                "dtypes") from exc

    def evaluate(self, overrides: dict, what: str = "computing finite differences") -> dict:
        """Outputs (NumPy, by ``out_idx``) with inputs replaced by ``overrides``."""
        E = self.engine
        with E.enable_grad() if self.differentiates_inside else E.no_grad():
            args = self.fresh_inputs(overrides)
            outs = self.call(args, what)
        return {o: E.to_numpy(outs[o]) for o in self.float_out}

    def also(self, kind: str, idx: int, key, vectors: list) -> None:
        """Ask for the ``kind`` ("vjp" or "jvp") of ``vectors`` on output or input
        ``idx`` in the next batch of that kind; the results go to
        ``extra_results[key]`` (a list, one entry per vector)."""
        self.extra[kind].setdefault(idx, []).append((key, vectors))

    def with_extra(self, kind: str, idx: int, units: np.ndarray, what: str) -> dict | None:
        """``vjp_batch`` or ``jvp_batch`` (``kind``) of ``units`` on ``idx``, with the
        pending extra vectors of that kind appended to the same batch; their
        results are filed in ``extra_results``. Returns the units' results."""
        pending = self.extra[kind].pop(idx, [])
        vectors = [v for _, vs in pending for v in vs]
        if vectors:
            units = np.concatenate([units, np.stack(vectors).astype(units.dtype)])
        batch = self.vjp_batch if kind == "vjp" else self.jvp_batch
        result = batch(idx, units, what)
        if result is None:
            return None
        n = start = len(units) - len(vectors)
        for key, vs in pending:
            self.extra_results[key] = [{k: None if v is None else v[start + j]
                                        for k, v in result.items()} for j in range(len(vs))]
            start += len(vs)
        return {k: None if v is None else v[:n] for k, v in result.items()}

    # ----- batched evaluations: ``None`` means "use the loop" ---------------
    def _batched(self, kind: str, what: str, size: int, compute):
        """Run ``compute()``, a batched evaluation of ``kind`` ("function",
        "vjp", "jvp"); on any exception remember why, stop batching that kind,
        and return ``None``, so the caller runs its loop instead, which reports
        a failure exactly as it would without batching."""
        from gradcheck.batching import batching_enabled
        if not batching_enabled() or size <= 1 or kind in self._unbatchable:
            return None     # (one vector: a plain call is cheaper than a batch of one)
        try:
            with self.engine.looped_ops() as looped:
                result = compute()
        except Exception as exc:  # the loop reproduces and reports it per vector
            self._unbatchable.add(kind)
            if self.batching["fallback"] is None:
                self.batching["fallback"] = (
                    f"{what} under vmap raised {type(exc).__name__} ({str(exc)[:200]}); "
                    f"every {kind} evaluation ran one vector at a time")
            return None
        if result is None:
            return None
        self.batching["batched_calls"] += 1
        for name, count in looped.items():
            self.batching["looped_ops"][name] = self.batching["looped_ops"].get(name, 0) + count
        return result

    def evaluate_batch(self, in_idx: int, arrays: np.ndarray, what: str) -> dict | None:
        """Outputs for each ``arrays[k]`` in place of input ``in_idx``, in one
        vmapped call: by ``out_idx``, stacked along a new first dimension."""
        E = self.engine

        def compute():
            grad = self.differentiates_inside
            with E.enable_grad() if grad else E.no_grad():
                args = self.fresh_inputs({})
                dims = [None] * len(args)
                args[in_idx] = E.from_numpy(arrays, requires_grad=grad and in_idx in self.diff_in)
                dims[in_idx] = 0
                if grad:
                    # the function differentiates inside: each example needs its
                    # own copy of every input, or their gradients would be summed
                    for i, a in self.arrays.items():
                        if i != in_idx:
                            copies = np.broadcast_to(a, (len(arrays), *a.shape))
                            args[i] = E.from_numpy(copies, requires_grad=i in self.diff_in)
                            dims[i] = 0
                mapped = E.vmap(self.func, tuple(dims))
                if mapped is None:
                    return None
                outs = as_tuple(mapped(*args))
                return {o: E.to_numpy(outs[o]) for o in self.float_out}
        result = self._batched("function", what, len(arrays), compute)
        if result is not None:
            self.counts["function"] += len(arrays)
        return result

    def vjp_batch(self, out_idx: int, grad_outputs: np.ndarray, what: str) -> dict | None:
        """Gradients for each ``grad_outputs[k]`` on output ``out_idx``, in one
        batched backward: by ``in_idx``, stacked (``None``: no gradient)."""
        E = self.engine
        if not E.supports_batched_grad:
            return None

        def compute():
            gos = E.from_numpy(np.asarray(grad_outputs, dtype=self.out_arrays[out_idx].dtype))
            grads = E.batched_grad([self.outputs[out_idx]], [self.inputs[i] for i in self.diff_in],
                                   [gos])
            return {i: None if g is None else E.to_numpy(g) for i, g in zip(self.diff_in, grads)}
        result = self._batched("vjp", what, len(grad_outputs), compute)
        if result is not None:
            self.counts["vjp"] += len(grad_outputs)
            for i, g in result.items():
                if g is not None:
                    self._check_shape(g[0], self.arrays[i].shape, f"input {i}", "vjp")
        return result

    def jvp_batch(self, in_idx: int, tangents: np.ndarray, what: str) -> dict | None:
        """Output tangents for each ``tangents[k]`` on input ``in_idx``, in one
        vmapped forward pass: by ``out_idx``, stacked."""
        E = self.engine
        if not E.supports_batched_forward_grad:
            return None

        def compute():
            args = self.fresh_inputs({})
            ts = E.from_numpy(np.asarray(tangents, dtype=self.arrays[in_idx].dtype))
            outs = as_tuple(E.batched_jvp(self.func, args, in_idx, ts))
            return {o: E.to_numpy(outs[o]) for o in self.float_out}
        result = self._batched("jvp", what, len(tangents), compute)
        if result is not None:
            self.counts["jvp"] += len(tangents)
            self.counts["function"] += len(tangents)
            for o, t in result.items():
                self._check_shape(t[0], self.out_arrays[o].shape, f"output {o}", "jvp")
        return result

    def fresh_inputs(self, overrides: dict) -> list:
        """New leaf tensors for the tensor inputs (``overrides`` by index)."""
        args = list(self.inputs)
        for i in self.arrays:
            grad = self.differentiates_inside and i in self.diff_in
            args[i] = self.engine.from_numpy(overrides.get(i, self.arrays[i]),
                                             requires_grad=grad)
        return args

    def vjp(self, grad_outputs: dict, what: str = "computing a vjp") -> dict:
        """Gradients (NumPy, by ``in_idx``) for ``grad_outputs`` by ``out_idx``.

        Outputs not in ``grad_outputs`` get no gradient (undefined). A
        missing gradient (``None``) is returned as ``None``.
        """
        E = self.engine
        keys = list(grad_outputs)
        outs = [self.outputs[o] for o in keys]
        gos = [E.from_numpy(np.asarray(grad_outputs[o], dtype=self.out_arrays[o].dtype))
               for o in keys]
        diff_inputs = [self.inputs[i] for i in self.diff_in]
        self.counts["vjp"] += 1
        try:
            grads = E.grad(outs, diff_inputs, gos)
        except Exception as exc:
            others = len(self.diff_out) > len(keys)
            hint = (" (the other outputs' gradients are undefined here: a Function that calls "
                    "ctx.set_materialize_grads(False) receives None for them)") if others else ""
            raise GradcheckError(
                f"{self.name}: the backward raised {type(exc).__name__} ({exc}) while {what}"
                f"{hint}; check the backward formula runs for these shapes and dtypes") from exc
        return {i: self._grad_array(i, g, "vjp") for i, g in zip(self.diff_in, grads)}

    def jvp(self, tangents: dict, what: str = "computing a jvp") -> dict:
        """Output tangents (NumPy, by ``out_idx``) for ``tangents`` by ``in_idx``."""
        E = self.engine
        self.counts["jvp"] += 1
        self.counts["function"] += 1
        try:
            with E.dual_level():
                args = self.fresh_inputs({})
                for i, t in tangents.items():
                    args[i] = E.make_dual(args[i], E.from_numpy(
                        np.asarray(t, dtype=self.arrays[i].dtype)))
                outs = as_tuple(self.func(*args))
                result = {o: E.tangent(outs[o]) for o in self.float_out}
                result = {o: None if t is None else E.to_numpy(t) for o, t in result.items()}
        except Exception as exc:
            raise GradcheckError(
                f"{self.name}: forward-mode AD raised {type(exc).__name__} ({exc}) while "
                f"{what}; check the jvp formula, or pass check_forward_ad=False "
                "if the function has none") from exc
        return {o: self._check_shape(t, self.out_arrays[o].shape, f"output {o}", "jvp")
                for o, t in result.items()}

    def _grad_array(self, in_idx, grad, mode):
        if grad is None:
            return None
        return self._check_shape(self.engine.to_numpy(grad), self.arrays[in_idx].shape,
                                 f"input {in_idx}", mode)

    def _check_shape(self, array, shape, who, mode):
        if array is not None and array.shape != tuple(shape):
            raise GradcheckError(
                f"{self.name}: the {mode} returned a result of shape {tuple(array.shape)} for "
                f"{who}, which has shape {tuple(shape)}; the {mode} must return one value "
                f"per element of {who}")
        return array
